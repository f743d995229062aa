// Model-based tests of the store: long seeded random sequences of KV requests of every kind, each
// answered by the store and by an independent reference model of etcd 3.4 (reference_model.h). Every
// answer must match exactly: the same status code and message on error, the same response message
// (MessageDifferencer) on success; and every few steps the whole state and the revision must match.
//
// REVKV_TEST_SEED=<n> reruns a random sequence (each random test prints its seed); REVKV_TEST_SCALE=<x>
// multiplies the number of steps; REVKV_TEST_VERBOSE=1 prints how many requests of each kind passed or
// failed with each error. A mismatch prints the step, the request, both answers and the requests before it.
// Beside the random tests: hand-picked sequences for paths the random ones reach seldom, and the
// shortest sequence for each discrepancy found. (Over 1,000 lines: those sequences are data; the
// generator and the checker serve only these tests.)
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/store.h"
#include "tests/server/store/reference_model.h"

namespace revkv::server {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using reference::PrefixRangeEnd;
using reference::ReferenceModel;
using Request =
    std::variant<etcdserverpb::RangeRequest, etcdserverpb::PutRequest, etcdserverpb::DeleteRangeRequest,
                 etcdserverpb::TxnRequest, etcdserverpb::CompactionRequest>;
using Rng = std::mt19937_64;

// ----- run parameters ------------------------------------------------------------------------------------

uint64_t TestSeed() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read on the test thread, which sets no variables
  if (const char* s = std::getenv("REVKV_TEST_SEED"); s != nullptr && *s != '\0') {
    return std::strtoull(s, nullptr, 10);
  }
  return std::random_device()() * uint64_t{0x9e3779b97f4a7c15} ^ std::random_device()();
}

int64_t ScaledSteps(int64_t steps) {
  double scale = 1.0;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): as above
  if (const char* s = std::getenv("REVKV_TEST_SCALE"); s != nullptr && *s != '\0') scale = std::atof(s);
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(steps) * scale));
}

// ----- printing ------------------------------------------------------------------------------------------

std::string Abbreviate(const std::string& s, size_t max = 6000) {
  if (s.size() <= max) return s;
  return s.substr(0, max) + "\n... (" + std::to_string(s.size() - max) + " more characters)";
}

// Replaces every long bytes field (values of up to 20 KB) by its start and its length, for printing.
void ShortenLongBytes(google::protobuf::Message* m) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = m->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->type() == FieldDescriptor::TYPE_BYTES && !f->is_repeated()) {
      const std::string v = reflection->GetString(*m, f);
      if (v.size() > 40) {
        reflection->SetString(m, f, v.substr(0, 16) + "...(" + std::to_string(v.size()) + " bytes)");
      }
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*m, f); ++i) {
          ShortenLongBytes(reflection->MutableRepeatedMessage(m, f, i));
        }
      } else {
        ShortenLongBytes(reflection->MutableMessage(m, f));
      }
    }
  }
}

template <class M>
std::string Printable(const M& m, bool short_form) {
  M copy = m;
  ShortenLongBytes(&copy);
  return short_form ? copy.ShortDebugString() : copy.DebugString();
}

const char* KindOf(const Request& r) {
  static constexpr const char* kNames[] = {"Range", "Put", "DeleteRange", "Txn", "Compact"};
  return kNames[r.index()];
}

std::string Describe(const Request& r) {
  std::string body = std::visit([](const auto& m) { return Printable(m, true); }, r);
  return std::string(KindOf(r)) + " { " + Abbreviate(body, 4000) + " }";
}

template <class Response>
std::string Describe(const absl::StatusOr<Response>& r) {
  return r.ok() ? Abbreviate(Printable(*r, false)) : r.status().ToString();
}

// True if both answers are the same error (code and message) or the same response.
template <class Response>
bool SameAnswer(const absl::StatusOr<Response>& want, const absl::StatusOr<Response>& got,
                std::string* diff) {
  if (want.ok() != got.ok()) {
    *diff = want.ok() ? "the store failed, the model did not" : "the model failed, the store did not";
    return false;
  }
  if (!want.ok()) {
    *diff = "different errors";
    return want.status().code() == got.status().code() && want.status().message() == got.status().message();
  }
  if (google::protobuf::util::MessageDifferencer::Equals(*want, *got)) return true;
  // Report the differences with long values shortened, unless that hides them. (A differencer writes
  // its report out when it is destroyed.)
  Response want_short = *want;
  Response got_short = *got;
  ShortenLongBytes(&want_short);
  ShortenLongBytes(&got_short);
  {
    google::protobuf::util::MessageDifferencer shortened;
    shortened.ReportDifferencesToString(diff);
    shortened.Compare(want_short, got_short);
  }
  if (diff->empty()) {
    google::protobuf::util::MessageDifferencer full;
    full.ReportDifferencesToString(diff);
    full.Compare(*want, *got);
  }
  return false;
}

// ----- the checker: one request to both, compared -------------------------------------------------------

class ModelChecker {
 public:
  // `seed` is printed with a mismatch (random sequences only).
  ModelChecker(Store* store, ReferenceModel* model, std::optional<uint64_t> seed)
      : store_(store), model_(model), seed_(seed) {}

  // Runs `request` on both and compares the answers and the revisions. On a mismatch records a test
  // failure with the details and returns false.
  bool Run(const Request& request) {
    ++step_;
    bool same = std::visit([&](const auto& r) { return RunOne(request, r); }, request);
    if (same && store_->Revision() != model_->Revision()) {
      same = Fail(request, "revision after the step: model " + std::to_string(model_->Revision()) +
                               ", store " + std::to_string(store_->Revision()));
    }
    if (same && store_->KeyCount() != static_cast<int64_t>(model_->Current().size())) {
      same = Fail(request, "key count after the step: model " + std::to_string(model_->Current().size()) +
                               ", store " + std::to_string(store_->KeyCount()));
    }
    recent_.push_back(Describe(request));
    if (recent_.size() > kRecent) recent_.pop_front();
    return same;
  }

  // Compares the whole state at the current revision and at `past_revision` (0: only the current).
  bool CheckFullState(int64_t past_revision) {
    RangeRequest all;
    all.set_key(std::string(1, '\0'));
    all.set_range_end(std::string(1, '\0'));
    if (!Run(all)) return false;
    if (past_revision == 0) return true;
    all.set_revision(past_revision);
    return Run(all);
  }

  int64_t Steps() const { return step_; }
  // How many requests of each kind succeeded or failed with each error (by the model's answer).
  const std::map<std::string, int64_t>& Outcomes() const { return outcomes_; }

 private:
  static constexpr size_t kRecent = 25;

  template <class Response>
  static absl::StatusOr<Response> Unwrap(absl::StatusOr<WriteResult<Response>> r, std::string* error) {
    if (!r.ok()) return r.status();
    if (r->revision != r->response.header().revision()) {
      *error = "WriteResult.revision " + std::to_string(r->revision) + " != response header revision " +
               std::to_string(r->response.header().revision());
    }
    return std::move(r->response);
  }

  template <class Response>
  bool Compare(const Request& request, const absl::StatusOr<Response>& want,
               const absl::StatusOr<Response>& got, const std::string& extra) {
    ++outcomes_[std::string(KindOf(request)) + ": " +
                (want.ok() ? "ok" : std::string(want.status().message()))];
    std::string diff;
    if (!SameAnswer(want, got, &diff)) {
      return Fail(request, "model (etcd semantics):\n" + Describe(want) + "\nstore:\n" + Describe(got) +
                               "\ndifference: " + Abbreviate(diff));
    }
    if (!extra.empty()) return Fail(request, extra);
    return true;
  }

  bool RunOne(const Request& request, const etcdserverpb::RangeRequest& r) {
    auto want = model_->Range(r);
    auto got = store_->Range(r);
    return Compare(request, want, got, "");
  }
  bool RunOne(const Request& request, const etcdserverpb::PutRequest& r) {
    auto want = model_->Put(r);
    std::string extra;
    auto got = Unwrap(store_->Put(r), &extra);
    return Compare(request, want, got, extra);
  }
  bool RunOne(const Request& request, const etcdserverpb::DeleteRangeRequest& r) {
    auto want = model_->DeleteRange(r);
    std::string extra;
    auto got = Unwrap(store_->DeleteRange(r), &extra);
    return Compare(request, want, got, extra);
  }
  bool RunOne(const Request& request, const etcdserverpb::TxnRequest& r) {
    auto want = model_->Txn(r);
    std::string extra;
    auto got = Unwrap(store_->Txn(r), &extra);
    return Compare(request, want, got, extra);
  }
  bool RunOne(const Request& request, const etcdserverpb::CompactionRequest& r) {
    auto want = model_->Compact(r);
    auto got = store_->Compact(r);
    return Compare(request, want, got, "");
  }

  bool Fail(const Request& request, const std::string& what) {
    std::ostringstream m;
    m << "store and model disagree at step " << step_;
    if (seed_.has_value()) m << " (REVKV_TEST_SEED=" << *seed_ << ")";
    m << "\n"
      << "request: " << Describe(request) << "\n"
      << what << "\nthe " << recent_.size() << " requests before it, oldest first:\n";
    for (const std::string& r : recent_) m << "  " << r << "\n";
    ADD_FAILURE() << m.str();
    return false;
  }

  Store* store_;
  ReferenceModel* model_;
  std::optional<uint64_t> seed_;
  int64_t step_ = 0;
  std::deque<std::string> recent_;
  std::map<std::string, int64_t> outcomes_;
};

// ----- random requests -----------------------------------------------------------------------------------

// What a generator draws from: the key space, values, and the size of Txns.
struct Profile {
  std::vector<std::string> keys;
  std::function<std::string(Rng&)> value;
  int max_ops_per_branch = 4;
  bool wide_deletes = true;  // deletes over prefixes of any length (else a few keys at most)
};

class RequestGenerator {
 public:
  RequestGenerator(Rng* rng, const ReferenceModel* model, Profile profile)
      : rng_(*rng), model_(*model), profile_(std::move(profile)) {
    std::set<std::string> prefixes;
    for (const std::string& k : profile_.keys) {
      for (size_t n = 1; n < k.size(); ++n) prefixes.insert(k.substr(0, n));
    }
    prefixes_.assign(prefixes.begin(), prefixes.end());
  }

  // A random request of any kind.
  Request Next() {
    const double x = Real();
    if (x < 0.27) return RandomPut(false);
    if (x < 0.50) return RandomRange(false);
    if (x < 0.58) return RandomDelete();
    if (x < 0.975) {
      // The model has no request size limit: keep Txns well below the store's (1.5 MiB).
      etcdserverpb::TxnRequest t = RandomTxn(0);
      while (t.ByteSizeLong() > (size_t{1} << 20)) t = RandomTxn(0);
      return t;
    }
    if (x < 0.99) return RandomCompact();
    return TooManyOpsTxn();
  }

  etcdserverpb::PutRequest RandomPut(bool in_txn) {
    etcdserverpb::PutRequest p;
    p.set_key(Chance(in_txn ? 0.003 : 0.01) ? std::string() : RandomKey());
    p.set_prev_kv(Chance(0.4));
    if (Chance(0.08)) {
      p.set_ignore_value(true);
      if (Chance(0.1)) p.set_value(profile_.value(rng_));  // "value is provided"
    } else {
      p.set_value(profile_.value(rng_));
    }
    if (Chance(0.08)) {
      p.set_ignore_lease(true);
      if (Chance(0.1)) p.set_lease(Uniform(1, 3));  // "lease is provided"
    } else if (Chance(in_txn ? 0.01 : 0.03)) {
      p.set_lease(Uniform(1, 3));  // no such lease
    }
    return p;
  }

  RangeRequest RandomRange(bool in_txn) {
    RangeRequest r;
    r.set_key(Chance(in_txn ? 0.003 : 0.01) ? std::string() : RandomBegin());
    r.set_range_end(RandomRangeEnd(r.key()));
    if (!in_txn) {
      r.set_revision(RandomReadRevision());
    } else if (Chance(0.08)) {
      r.set_revision(RandomReadRevision());  // served at that revision, as etcd does
    }
    const double l = Real();
    if (l < 0.3) {
      r.set_limit(Uniform(1, 5));
    } else if (l < 0.34) {
      r.set_limit(Uniform(6, 200));
    } else if (l < 0.37) {
      r.set_limit(-Uniform(1, 3));
    }
    if (Chance(0.35)) {
      r.set_sort_order(static_cast<RangeRequest::SortOrder>(Uniform(0, 2)));
      r.set_sort_target(static_cast<RangeRequest::SortTarget>(Uniform(0, 4)));
    }
    r.set_count_only(Chance(0.08));
    r.set_keys_only(Chance(0.15));
    r.set_serializable(Chance(0.2));
    const int64_t cur = model_.Revision();
    if (Chance(0.08)) r.set_min_mod_revision(Uniform(0, cur + 1));
    if (Chance(0.08)) r.set_max_mod_revision(Uniform(0, cur + 1));
    if (Chance(0.08)) r.set_min_create_revision(Uniform(0, cur + 1));
    if (Chance(0.08)) r.set_max_create_revision(Uniform(0, cur + 1));
    return r;
  }

  etcdserverpb::DeleteRangeRequest RandomDelete() {
    etcdserverpb::DeleteRangeRequest d;
    d.set_prev_kv(Chance(0.5));
    if (Chance(0.01)) return d;  // empty key
    if (profile_.wide_deletes) {
      d.set_key(RandomBegin());
      d.set_range_end(RandomRangeEnd(d.key(), 0.55));  // most on one key
      return d;
    }
    d.set_key(RandomKey());
    if (Chance(0.4)) d.set_range_end(PrefixRangeEnd(d.key().substr(0, d.key().size() - 1)));
    return d;
  }

  etcdserverpb::TxnRequest RandomTxn(int depth) {
    etcdserverpb::TxnRequest t;
    const int compares = Weighted({20, 40, 25, 15});
    for (int i = 0; i < compares; ++i) *t.add_compare() = RandomCompare();
    const int max_ops = profile_.max_ops_per_branch;
    AddOps(t.mutable_success(), static_cast<int>(Uniform(0, max_ops)), depth);
    AddOps(t.mutable_failure(), static_cast<int>(Uniform(0, max_ops - 1)), depth);
    return t;
  }

  Compare RandomCompare() {
    Compare c;
    c.set_key(Chance(0.003) ? std::string() : RandomBegin());
    if (Chance(0.25)) c.set_range_end(RandomRangeEnd(c.key()));
    c.set_target(static_cast<Compare::CompareTarget>(Uniform(0, 4)));
    c.set_result(static_cast<Compare::CompareResult>(Uniform(0, 3)));
    // Values near an existing key-value's, so that every result happens.
    const mvccpb::KeyValue* kv = nullptr;
    auto it = model_.Current().lower_bound(c.key());
    if (it != model_.Current().end() && Chance(0.7)) kv = it->second.get();
    const double u = Real();
    int target = c.target();
    if (u < 0.07) return c;                                  // no union: compares with 0 / ""
    if (u < 0.15) target = static_cast<int>(Uniform(0, 4));  // maybe a union member of another target
    const int64_t cur = model_.Revision();
    switch (target) {
      case Compare::VERSION:
        c.set_version(kv != nullptr && Chance(0.6) ? kv->version() + Uniform(-1, 1) : Uniform(0, 4));
        break;
      case Compare::CREATE:
        c.set_create_revision(kv != nullptr && Chance(0.6) ? kv->create_revision() + Uniform(-1, 1)
                                                           : Uniform(0, cur + 1));
        break;
      case Compare::MOD:
        c.set_mod_revision(kv != nullptr && Chance(0.6) ? kv->mod_revision() + Uniform(-1, 1)
                                                        : Uniform(0, cur + 1));
        break;
      case Compare::VALUE:
        c.set_value(kv != nullptr && Chance(0.6) ? kv->value() : profile_.value(rng_));
        break;
      default:
        c.set_lease(Chance(0.85) ? 0 : Uniform(1, 2));
        break;
    }
    return c;
  }

  etcdserverpb::CompactionRequest RandomCompact() {
    etcdserverpb::CompactionRequest c;
    const int64_t cur = model_.Revision();
    const int64_t compacted = model_.CompactRevision();
    const double x = Real();
    if (x < 0.6) {
      c.set_revision(Uniform(std::max(compacted + 1, cur - 40), cur));
    } else if (x < 0.8) {
      c.set_revision(Uniform(compacted - 2, compacted));  // already compacted
    } else if (x < 0.9) {
      c.set_revision(cur + Uniform(1, 2));  // future
    } else {
      c.set_revision(Uniform(-1, 2));
    }
    c.set_physical(Chance(0.5));
    return c;
  }

  // Txns at and around the operation limit (128): at the top level, or in a nested Txn, whose limit is
  // what its parent leaves (max - the parent's op count).
  etcdserverpb::TxnRequest TooManyOpsTxn() {
    etcdserverpb::TxnRequest t;
    auto ranges = [&](google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>* ops, int n) {
      for (int i = 0; i < n; ++i) ops->Add()->mutable_request_range()->set_key(RandomKey());
    };
    const int variant = static_cast<int>(Uniform(0, 2));
    if (variant == 0) {
      ranges(t.mutable_success(), static_cast<int>(Uniform(127, 129)));
    } else if (variant == 1) {
      const int n = static_cast<int>(Uniform(127, 129));
      for (int i = 0; i < n; ++i) *t.add_compare() = RandomCompare();
      ranges(t.mutable_failure(), 2);
    } else {
      const int parent = static_cast<int>(Uniform(100, 126));
      ranges(t.mutable_success(), parent - 1);
      auto* nested = t.add_success()->mutable_request_txn();
      const int left = 128 - parent;
      ranges(nested->mutable_failure(), static_cast<int>(Uniform(left - 1, left + 1)));
    }
    return t;
  }

  // A revision to read at: mostly now, else inside the readable window, just before it (compacted), in
  // the future, or negative (now).
  int64_t RandomReadRevision() {
    const int64_t cur = model_.Revision();
    const int64_t oldest = std::max<int64_t>(1, model_.OldestReadableRevision());
    const double x = Real();
    if (x < 0.55) return 0;
    if (x < 0.80) return Uniform(oldest, cur);
    if (x < 0.88) return Uniform(std::max<int64_t>(1, oldest - 5), oldest);
    if (x < 0.94) return cur + Uniform(1, 3);
    if (x < 0.97) return Uniform(1, cur);
    return -Uniform(1, 3);
  }

  const std::string& RandomKey() { return profile_.keys[Index(profile_.keys.size())]; }

  // A range start: a key, a prefix of keys, or some other short string.
  std::string RandomBegin() {
    const double x = Real();
    if (x < 0.7) return RandomKey();
    if (x < 0.95) return prefixes_[Index(prefixes_.size())];
    return RandomString();
  }

  // A range_end for `key`: none (the key alone) with probability `single`, else its prefix end, "\0"
  // (every key from it), another key (maybe before it), the key followed by "\0", or another string.
  std::string RandomRangeEnd(const std::string& key, double single = 0.35) {
    if (Chance(single)) return std::string();
    const double x = Real();
    if (x < 0.40) return PrefixRangeEnd(key);
    if (x < 0.55) return std::string(1, '\0');
    if (x < 0.85) return RandomKey();
    if (x < 0.93) return key + std::string(1, '\0');
    return RandomString();
  }

  double Real() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }
  bool Chance(double p) { return Real() < p; }
  int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  size_t Index(size_t n) { return static_cast<size_t>(Uniform(0, static_cast<int64_t>(n) - 1)); }

 private:
  int Weighted(std::initializer_list<double> weights) {
    return static_cast<int>(std::discrete_distribution<int>(weights)(rng_));
  }

  std::string RandomString() {
    static const std::string kAlphabet = std::string("abcfz/0~") + '\0' + '\xff';
    std::string s;
    const int n = static_cast<int>(Uniform(1, 3));
    for (int i = 0; i < n; ++i) s.push_back(kAlphabet[Index(kAlphabet.size())]);
    return s;
  }

  void AddOps(google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>* ops, int n, int depth) {
    for (int i = 0; i < n; ++i) {
      etcdserverpb::RequestOp* op = ops->Add();
      switch (Weighted({35, 35, 15, depth < 2 ? 13.0 : 0.0, 1})) {
        case 0:
          *op->mutable_request_range() = RandomRange(true);
          break;
        case 1:
          *op->mutable_request_put() = RandomPut(true);
          break;
        case 2:
          *op->mutable_request_delete_range() = RandomDelete();
          break;
        case 3:
          *op->mutable_request_txn() = RandomTxn(depth + 1);
          break;
        default:
          if (!Chance(0.3)) *op->mutable_request_range() = RandomRange(true);
          break;  // else an empty op
      }
    }
  }

  Rng& rng_;
  const ReferenceModel& model_;
  Profile profile_;
  std::vector<std::string> prefixes_;
};

// ~40 keys, several sharing prefixes, two with bytes 0x00 and 0xff; short values with many repeats.
Profile SmallProfile() {
  Profile p;
  p.keys = {"a",   "a/1", "a/10", "a/2", "a/b", "a/b/c", "ab",      "abc",     "b",      "b/x",
            "b/y", "ba",  "c/0",  "c/1", "c/2", "c/3",   "c/4",     "c/5",     "c/6",    "c/7",
            "c/8", "c/9", "d",    "dd",  "ddd", "foo",   "foo/bar", "foo/baz", "foobar", "fop",
            "k1",  "k2",  "k3",   "x",   "y",   "z",     "zz",      "~"};
  p.keys.push_back(std::string("b\0", 2));
  p.keys.push_back(std::string("b\xff", 2));
  p.value = [](Rng& rng) {
    static const char* kValues[] = {"", "v", "v1", "v2", "w", "x1", "zz"};
    const uint64_t x = rng() % 10;
    if (x < 7) return std::string(kValues[rng() % 7]);
    std::string s;
    for (uint64_t i = 0, n = 1 + rng() % 6; i < n; ++i) s.push_back(static_cast<char>('a' + rng() % 26));
    return s;
  };
  return p;
}

// 3000 keys ("k/0000".."k/2999"), values up to 20 KB: a quarter above the large-object threshold (8 KB).
Profile LargeProfile() {
  Profile p;
  for (int i = 0; i < 3000; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k/%04d", i);
    p.keys.emplace_back(buf);
  }
  p.value = [](Rng& rng) {
    const uint64_t c = rng() % 100;
    size_t size;
    if (c < 35) {
      size = rng() % 17;
    } else if (c < 60) {
      size = 16 + rng() % 2048;
    } else if (c < 75) {
      size = 2048 + rng() % 6144;
    } else {
      size = 8192 + rng() % (20 * 1024 - 8192 + 1);
    }
    std::string s(size, static_cast<char>('a' + rng() % 26));
    for (size_t i = 0; i < std::min<size_t>(size, 3); ++i) s[i] = static_cast<char>('a' + rng() % 4);
    for (size_t i = 3; i < size; i += 997) s[i] = static_cast<char>(rng());
    return s;
  };
  p.max_ops_per_branch = 5;
  p.wide_deletes = false;
  return p;
}

// ----- hand-written requests, in protobuf text format --------------------------------------------------

template <class M>
M Parse(const std::string& text) {
  M m;
  if (!google::protobuf::TextFormat::ParseFromString(text, &m)) ADD_FAILURE() << "bad text proto: " << text;
  return m;
}
Request PutReq(const std::string& text) { return Parse<etcdserverpb::PutRequest>(text); }
Request RangeReq(const std::string& text) { return Parse<etcdserverpb::RangeRequest>(text); }
Request DeleteReq(const std::string& text) { return Parse<etcdserverpb::DeleteRangeRequest>(text); }
Request TxnReq(const std::string& text) { return Parse<etcdserverpb::TxnRequest>(text); }
Request CompactReq(int64_t revision) {
  etcdserverpb::CompactionRequest c;
  c.set_revision(revision);
  return c;
}

// A Txn whose success branch holds `n` Ranges, then `extra` (text of more ops).
Request TxnWithRanges(int n, const std::string& extra = "") {
  std::string text;
  for (int i = 0; i < n; ++i) text += "success { request_range { key: \"a\" } } ";
  return TxnReq(text + extra);
}

// ----- the tests -----------------------------------------------------------------------------------------

class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::InitializeRuntime(runtime::HeapOptions());
    registration_.emplace("model-test");
  }
  void TearDown() override {
    checker_.reset();
    store_.reset();
    registration_.reset();
  }

  // A fresh store (the previous one is destroyed first: one store per process) and a fresh model.
  void Start(const StoreOptions& options) {
    checker_.reset();
    store_.reset();
    auto s = Store::Create(options, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    model_.emplace(ReferenceModel::Options{options.max_txn_ops, options.history_revisions});
    checker_.emplace(store_.get(), &*model_, random_ ? std::optional<uint64_t>(seed_) : std::nullopt);
  }

  // Start() for a random test: picks and prints the seed.
  void StartRandom(const StoreOptions& options) {
    seed_ = TestSeed();
    random_ = true;
    std::cout << "[   seed   ] REVKV_TEST_SEED=" << seed_ << std::endl;
    Start(options);
  }

  // Runs `requests` in order on a fresh store and model, then compares the whole state; stops at the
  // first mismatch (a test failure).
  void RunSequence(const std::vector<Request>& requests, const StoreOptions& options = StoreOptions()) {
    Start(options);
    for (const Request& r : requests) {
      if (!checker_->Run(r)) return;
    }
    checker_->CheckFullState(0);
  }

  // `steps` random requests from `profile`, with a full-state comparison every `full_every` steps.
  void RunRandom(Profile profile, int64_t steps, int64_t full_every, Rng* rng) {
    RequestGenerator gen(rng, &*model_, std::move(profile));
    const auto start = std::chrono::steady_clock::now();
    int64_t i = 0;
    double key_steps = 0;
    for (; i < steps; ++i) {
      if (!checker_->Run(gen.Next())) break;
      key_steps += static_cast<double>(model_->Current().size());
      if ((i + 1) % full_every == 0) {
        const int64_t oldest = std::max<int64_t>(1, model_->OldestReadableRevision());
        if (!checker_->CheckFullState(gen.Uniform(oldest, model_->Revision()))) break;
      }
    }
    if (i == steps) {
      EXPECT_TRUE(checker_->CheckFullState(0));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[  random  ] " << i << " steps (" << checker_->Steps() << " requests), revision "
              << model_->Revision() << ", " << key_steps / static_cast<double>(std::max<int64_t>(i, 1))
              << " keys on average, " << seconds << " s" << std::endl;
    if (std::getenv("REVKV_TEST_VERBOSE") != nullptr) {  // NOLINT(concurrency-mt-unsafe): as above
      for (const auto& [outcome, n] : checker_->Outcomes()) {
        std::cout << "    " << n << "  " << outcome << "\n";
      }
    }
  }

  uint64_t seed_ = 0;
  bool random_ = false;
  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
  std::optional<ReferenceModel> model_;
  std::optional<ModelChecker> checker_;
};

TEST_F(ModelTest, RandomRequestsMatchEtcdSemantics) {
  StartRandom(StoreOptions());  // history_revisions 10000: the window starts moving before the end
  Rng rng(seed_);
  RunRandom(SmallProfile(), ScaledSteps(20000), 100, &rng);
}

TEST_F(ModelTest, RandomRequestsMatchWithAShortHistoryWindow) {
  StoreOptions options;
  options.history_revisions = 50;
  StartRandom(options);
  Rng rng(seed_ + 1);
  RunRandom(SmallProfile(), ScaledSteps(5000), 50, &rng);
}

TEST_F(ModelTest, LargeValuesAndManyKeysMatch) {
  StartRandom(StoreOptions());
  Rng rng(seed_ + 2);
  Profile profile = LargeProfile();
  // Load every key, 40 per Txn, then random requests.
  for (size_t i = 0; i < profile.keys.size(); i += 40) {
    etcdserverpb::TxnRequest t;
    for (size_t k = i; k < std::min(profile.keys.size(), i + 40); ++k) {
      auto* p = t.add_success()->mutable_request_put();
      p->set_key(profile.keys[k]);
      p->set_value(profile.value(rng));
    }
    ASSERT_TRUE(checker_->Run(t));
  }
  ASSERT_TRUE(checker_->CheckFullState(1));
  RunRandom(std::move(profile), ScaledSteps(1500), 250, &rng);
}

// ----- hand-picked sequences: rare paths the random tests reach seldom -------------------------------------

TEST_F(ModelTest, PutAndDeleteOfOneKeyInSiblingNestedTxnsMatch) {
  // checkIntervals checks a nested Txn's puts only against deletes seen before it: put-then-delete is
  // accepted, delete-then-put is a duplicate.
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      TxnReq(R"pb(success { request_txn { success { request_put { key: "a" value: "2" prev_kv: true } } } }
                  success { request_txn { success { request_delete_range { key: "a" prev_kv: true } } } }
                  success { request_range { key: "a" } })pb"),
      RangeReq(R"pb(key: "a" revision: 2)pb"),
      TxnReq(R"pb(success { request_txn { success { request_delete_range { key: "a" range_end: "b" } } } }
                  success { request_txn { success { request_put { key: "a" value: "3" } } } })pb"),
      TxnReq(
          R"pb(success { request_txn { success { request_put { key: "b" value: "1" } } } }
               success { request_txn { failure { request_delete_range { key: "a" range_end: "c" } } } })pb"),
  });
}

TEST_F(ModelTest, DeletesToTheEndAreNotIntervalsForDuplicateChecks) {
  // A range_end of "\0" makes an empty string-affine interval in checkIntervals, so puts beside such a
  // delete pass, and apply in order.
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      PutReq(R"pb(key: "b" value: "1")pb"),
      PutReq(R"pb(key: "c" value: "1")pb"),
      TxnReq(R"pb(success { request_delete_range { key: "a" range_end: "\000" prev_kv: true } }
                  success { request_put { key: "b" value: "2" prev_kv: true } }
                  success { request_range { key: "a" range_end: "\000" } })pb"),
      TxnReq(R"pb(success { request_put { key: "c" value: "3" } }
                  success { request_delete_range { key: "b" range_end: "\000" prev_kv: true } })pb"),
      TxnReq(R"pb(success { request_txn { success { request_delete_range { key: "a" range_end: "\000" } } } }
                  success { request_put { key: "x" value: "1" } })pb"),
      // etcd panics here (its check passes on the state before the Txn): the model fails the Txn.
      PutReq(R"pb(key: "p" value: "1")pb"),
      TxnReq(R"pb(success { request_delete_range { key: "p" range_end: "\000" } }
                  success { request_put { key: "p" ignore_value: true } })pb"),
      RangeReq(R"pb(key: "a" range_end: "\000")pb"),
  });
}

TEST_F(ModelTest, TxnSubResponseRevisionsMatch) {
  // storeTxnWrite: reads and empty deletes report the revision before the Txn until it changes
  // something, the next one after; a Txn whose taken branch only reads gets no revision.
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      TxnReq(R"pb(success { request_range { key: "a" } }
                  success { request_delete_range { key: "zz" } }
                  success { request_put { key: "b" value: "1" } }
                  success {
                    request_range { key: "a" range_end: "\000" sort_order: DESCEND sort_target: MOD }
                  }
                  success { request_delete_range { key: "zz" } }
                  success { request_txn { success { request_range { key: "b" } } } })pb"),
      TxnReq(R"pb(compare { key: "a" target: VERSION result: EQUAL version: 0 }
                  success { request_put { key: "c" value: "1" } }
                  failure { request_range { key: "a" } }
                  failure { request_delete_range { key: "zz" } }
                  failure { request_txn {} })pb"),
      TxnReq(R"pb(success { request_range { key: "a" } })pb"),
      TxnReq(R"pb()pb"),
      DeleteReq(R"pb(key: "zz" range_end: "zzz")pb"),
  });
}

TEST_F(ModelTest, ComparesOverRangesAndMissingKeysMatch) {
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      PutReq(R"pb(key: "a/1" value: "2")pb"),
      PutReq(R"pb(key: "a/1" value: "3")pb"),
      // A missing key: a VALUE compare fails, the others compare with zero values.
      TxnReq(R"pb(compare { key: "m" target: VALUE result: NOT_EQUAL value: "x" }
                  success { request_range { key: "a" } })pb"),
      TxnReq(R"pb(compare { key: "m" target: VERSION result: EQUAL version: 0 }
                  compare { key: "m" target: CREATE result: LESS create_revision: 1 }
                  compare { key: "m" target: MOD result: EQUAL }
                  compare { key: "m" target: LEASE result: EQUAL lease: 0 }
                  success { request_range { key: "a" } })pb"),
      // Over a range every key must match.
      TxnReq(R"pb(compare { key: "a" range_end: "b" target: VERSION result: GREATER version: 0 }
                  compare { key: "a" range_end: "\000" target: MOD result: LESS mod_revision: 5 }
                  success { request_range { key: "a" range_end: "b" } })pb"),
      TxnReq(R"pb(compare { key: "a" range_end: "b" target: VERSION result: EQUAL version: 1 }
                  failure { request_range { key: "a" range_end: "b" } })pb"),
      TxnReq(R"pb(compare { key: "a/" range_end: "a0" target: VALUE result: GREATER value: "2" }
                  success { request_put { key: "b" value: "1" } })pb"),
      // A union member of another target compares with 0 / "".
      TxnReq(R"pb(compare { key: "a" target: MOD result: GREATER version: 100 }
                  compare { key: "a" target: VALUE result: GREATER create_revision: 1 }
                  success { request_put { key: "c" value: "1" } })pb"),
      // Nested compares see the state before the Txn, not its earlier ops.
      TxnReq(R"pb(success { request_put { key: "a" value: "new" } }
                  success {
                    request_txn {
                      compare { key: "a" target: VALUE result: EQUAL value: "new" }
                      success { request_put { key: "then" value: "1" } }
                      failure { request_put { key: "else" value: "1" } }
                    }
                  })pb"),
  });
}

TEST_F(ModelTest, OperationLimitsMatch) {
  RunSequence({
      TxnWithRanges(128),
      TxnWithRanges(129),
      TxnReq(std::string(R"pb(failure { request_range { key: "a" } })pb") +
             [] {
               std::string c;
               for (int i = 0; i < 129; ++i) c += R"pb(compare { key: "a" })pb";
               return c;
             }()),
      // A nested Txn may hold what its parent leaves: max - the parent's op count.
      TxnWithRanges(126, R"pb(success {
                                request_txn {
                                  success { request_range { key: "a" } }
                                  failure { request_range { key: "a" } }
                                }
                              })pb"),
      TxnWithRanges(126, R"pb(success {
                                request_txn {
                                  success { request_range { key: "a" } }
                                  success { request_range { key: "a" } }
                                }
                              })pb"),
      TxnWithRanges(127, R"pb(success { request_txn {} })pb"),
      TxnWithRanges(127, R"pb(failure { request_txn { failure { request_range { key: "a" } } } })pb"),
  });
  StoreOptions small;
  small.max_txn_ops = 3;
  RunSequence({TxnWithRanges(3), TxnWithRanges(4), TxnWithRanges(2, R"pb(success { request_txn {} })pb")},
              small);
}

TEST_F(ModelTest, DuplicateKeyChecksMatch) {
  RunSequence({
      PutReq(R"pb(key: "b" value: "1")pb"),
      // The two branches are separate lists.
      TxnReq(R"pb(success { request_put { key: "a" value: "1" } }
                  failure { request_put { key: "a" value: "2" } })pb"),
      // A nested Txn's branches exclude each other.
      TxnReq(R"pb(success {
                    request_txn {
                      success { request_put { key: "n" value: "1" } }
                      failure { request_put { key: "n" value: "2" } }
                    }
                  })pb"),
      TxnReq(R"pb(success { request_txn { success { request_put { key: "n" value: "1" } } } }
                  success { request_put { key: "n" value: "2" } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "a" range_end: "c" } }
                  success { request_put { key: "b" value: "2" } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "b" } }
                  success { request_put { key: "b" value: "2" } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "c" range_end: "a" } }
                  success { request_put { key: "b" value: "2" } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "b" range_end: "b\000" } }
                  success { request_put { key: "b" value: "3" } })pb"),
      TxnReq(R"pb(success { request_txn { failure { request_delete_range { key: "a" range_end: "c" } } } }
                  success { request_txn { success { request_put { key: "b" value: "4" } } } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "a" } }
                  success { request_delete_range { key: "a" } })pb"),
      TxnReq(R"pb(success { request_put { key: "q" value: "1" } }
                  success { request_put { key: "q" value: "2" } })pb"),
  });
}

TEST_F(ModelTest, MalformedRequestsMatch) {
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      RangeReq(R"pb(range_end: "b")pb"),
      PutReq(R"pb(value: "1")pb"),
      DeleteReq(R"pb(range_end: "b")pb"),
      PutReq(R"pb(key: "a" value: "1" ignore_value: true)pb"),
      PutReq(R"pb(key: "a" lease: 1 ignore_lease: true)pb"),
      PutReq(R"pb(key: "a" lease: 1)pb"),
      PutReq(R"pb(key: "m" ignore_value: true)pb"),
      PutReq(R"pb(key: "m" ignore_lease: true)pb"),
      PutReq(R"pb(key: "m" lease: 1 ignore_value: true)pb"),  // apply.go Put: the lease first
      PutReq(R"pb(key: "a" ignore_value: true ignore_lease: true prev_kv: true)pb"),
      TxnReq(R"pb(success {})pb"),
      TxnReq(R"pb(compare { target: VALUE value: "1" }
                  success { request_range { key: "a" } })pb"),
      TxnReq(R"pb(success { request_txn { compare { target: VALUE } } })pb"),
      TxnReq(R"pb(success { request_range { key: "a" } }
                  failure { request_put { key: "a" value: "x" ignore_value: true } })pb"),
      TxnReq(R"pb(success { request_put { key: "a" lease: 2 ignore_lease: true } })pb"),
      TxnReq(R"pb(success { request_put { key: "m" ignore_lease: true } })pb"),
      TxnReq(R"pb(failure { request_put { key: "m" ignore_lease: true } }
                  success { request_range { key: "a" } })pb"),
      TxnReq(R"pb(success { request_put { key: "m" value: "1" lease: 5 } })pb"),
      TxnReq(R"pb(success {
                    request_txn { success { request_txn { success { request_put { key: "m" lease: 5 } } } } }
                  })pb"),
  });
}

TEST_F(ModelTest, RangeRevisionsInsideTxnsMatch) {
  // etcd serves a Range with a revision inside a Txn at that revision, after checkRange on the taken path
  // (future and compacted revisions fail the whole Txn before anything is applied).
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      PutReq(R"pb(key: "a" value: "2")pb"),
      TxnReq(R"pb(success { request_range { key: "a" revision: 2 } })pb"),
      TxnReq(R"pb(compare { key: "a" target: VERSION result: EQUAL version: 9 }
                  success { request_range { key: "a" revision: 2 } }
                  failure { request_range { key: "a" } })pb"),
      TxnReq(R"pb(success { request_txn { success { request_range { key: "a" revision: 3 } } } })pb"),
      TxnReq(R"pb(success { request_delete_range { key: "a" } }
                  success { request_range { key: "a" revision: 2 } })pb"),
      // The revision before the Txn does not show the Txn's own writes; revision 0 and negative ones do.
      TxnReq(R"pb(success { request_put { key: "b" value: "x" } }
                  success { request_range { key: "a" range_end: "c" revision: 4 } }
                  success { request_range { key: "a" range_end: "c" } }
                  success { request_range { key: "a" range_end: "c" revision: -1 } })pb"),
      // A future revision, on the taken path only, fails the Txn and its Put is not applied.
      TxnReq(R"pb(success { request_put { key: "c" value: "y" } }
                  success { request_range { key: "a" revision: 99 } })pb"),
      TxnReq(R"pb(compare { key: "b" target: VALUE result: EQUAL value: "x" }
                  success { request_range { key: "b" revision: 4 } }
                  failure { request_range { key: "b" revision: 99 } })pb"),
      // Compacted revisions, and negative ones once anything was compacted, fail the Txn.
      CompactReq(3),
      TxnReq(R"pb(success { request_put { key: "c" value: "z" } }
                  success { request_range { key: "a" revision: 2 } })pb"),
      TxnReq(R"pb(success { request_range { key: "a" revision: 3 } })pb"),
      TxnReq(R"pb(success { request_range { key: "a" revision: -2 } })pb"),
      RangeReq(R"pb(key: "c")pb"),
  });
}

TEST_F(ModelTest, CompactionAndPastReadsMatch) {
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      PutReq(R"pb(key: "a" value: "2")pb"),
      DeleteReq(R"pb(key: "a")pb"),
      PutReq(R"pb(key: "a" value: "3")pb"),
      RangeReq(R"pb(key: "a" revision: 2)pb"),
      RangeReq(R"pb(key: "a" revision: 4)pb"),
      RangeReq(R"pb(key: "a" revision: 6)pb"),
      RangeReq(R"pb(key: "a" revision: -1)pb"),
      CompactReq(3),
      CompactReq(3),
      CompactReq(2),
      CompactReq(6),
      RangeReq(R"pb(key: "a" revision: 2)pb"),
      RangeReq(R"pb(key: "a" revision: 3)pb"),
      RangeReq(R"pb(key: "a" range_end: "\000" revision: 4 count_only: true)pb"),
      CompactReq(5),
      CompactReq(5),
      RangeReq(R"pb(key: "a" revision: 4)pb"),
      RangeReq(R"pb(key: "a" revision: 5)pb"),
  });
}

TEST_F(ModelTest, KeysWithZeroAndFfBytesMatch) {
  RunSequence({
      PutReq(R"pb(key: "b" value: "1")pb"),
      PutReq(R"pb(key: "b\000" value: "2")pb"),
      PutReq(R"pb(key: "b\377" value: "3")pb"),
      PutReq(R"pb(key: "b\377\377" value: "4")pb"),
      PutReq(R"pb(key: "c" value: "5")pb"),
      PutReq(R"pb(key: "\377" value: "6")pb"),
      RangeReq(R"pb(key: "b" range_end: "c")pb"),
      RangeReq(R"pb(key: "b\377" range_end: "c" sort_order: DESCEND)pb"),
      RangeReq(R"pb(key: "\377" range_end: "\000")pb"),
      RangeReq(R"pb(key: "\000" range_end: "\000" limit: 2)pb"),
      DeleteReq(R"pb(key: "b\377" range_end: "c" prev_kv: true)pb"),
      RangeReq(R"pb(key: "b" range_end: "b\000\000")pb"),
  });
}

TEST_F(ModelTest, RangeOptionsMatch) {
  RunSequence({
      PutReq(R"pb(key: "a" value: "3")pb"),
      PutReq(R"pb(key: "b" value: "1")pb"),
      PutReq(R"pb(key: "c" value: "3")pb"),
      PutReq(R"pb(key: "b" value: "2")pb"),
      PutReq(R"pb(key: "d" value: "1")pb"),
      RangeReq(R"pb(key: "a" range_end: "z" limit: 2)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" limit: 4)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" limit: 2 count_only: true)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" limit: 2 min_mod_revision: 4)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" limit: 1 max_create_revision: 3 min_create_revision: 3)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_target: VALUE)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_order: DESCEND sort_target: VALUE limit: 3)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_order: DESCEND sort_target: VERSION)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_order: ASCEND sort_target: CREATE keys_only: true)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_order: DESCEND sort_target: MOD limit: 1)pb"),
      RangeReq(R"pb(key: "a" range_end: "z" sort_order: DESCEND sort_target: KEY revision: 3)pb"),
      RangeReq(R"pb(key: "c" range_end: "a")pb"),
      RangeReq(R"pb(key: "b" range_end: "b")pb"),
  });
}

// ----- the discrepancies found: each the shortest sequence that shows it ----------------------------------

TEST_F(ModelTest, CompactAtRevisionOneBeforeAnyCompactionSucceeds) {
  // mvcc/kvstore.go: compactMainRev starts at -1 and updateCompactRev refuses only rev <= compactMainRev.
  RunSequence({PutReq(R"pb(key: "a" value: "1")pb"), CompactReq(1)});
  RunSequence({CompactReq(0)});
}

TEST_F(ModelTest, KeysOnlyRangeSortedByValueSortsOnTheValues) {
  // apply.go Range: sorts rr.KVs (values loaded), and clears the values for keys_only only afterwards.
  RunSequence({
      PutReq(R"pb(key: "a" value: "2")pb"),
      PutReq(R"pb(key: "b" value: "1")pb"),
      RangeReq(R"pb(key: "a" range_end: "c" sort_target: VALUE keys_only: true)pb"),
  });
}

TEST_F(ModelTest, NegativeLimitMeansNoLimit) {
  // apply.go Range passes limit <= 0 on as "no limit" (kvstore_txn.go rangeKeys: limit <= 0 -> all).
  RunSequence({PutReq(R"pb(key: "a" value: "1")pb"), RangeReq(R"pb(key: "a" limit: -1)pb")});
}

TEST_F(ModelTest, TxnPutChecksRunBeforeAnyOpOnTheStateBeforeTheTxn) {
  // apply.go Txn -> checkRequests(checkRequestPut): for each put on the taken path, in order, on the
  // state before the Txn: ignore_value / ignore_lease need the key (KeyNotFound), then the lease.
  RunSequence({TxnReq(R"pb(success { request_put { key: "a" lease: 1 ignore_value: true } })pb")});
  RunSequence({
      PutReq(R"pb(key: "a" value: "1")pb"),
      TxnReq(R"pb(success { request_delete_range { key: "a" range_end: "\000" } }
                  success { request_put { key: "a" ignore_value: true } }
                  success { request_put { key: "z" value: "1" lease: 1 } })pb"),
  });
}

TEST_F(ModelTest, RevisionFiltersInATxnSeeItsWritesAtTheTxnRevision) {
  // A key the Txn wrote has mod_revision (and, if new, create_revision) = the Txn's revision, and
  // apply.go Range's filters compare with that.
  RunSequence({TxnReq(R"pb(success { request_put { key: "a" value: "1" } }
                           success { request_range { key: "a" max_mod_revision: 2 } }
                           success { request_range { key: "a" max_create_revision: 2 } }
                           success { request_range { key: "a" min_mod_revision: 3 } })pb")});
}

}  // namespace
}  // namespace revkv::server
