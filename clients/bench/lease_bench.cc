// revkv-lease-bench: lease grants/s and keep-alives/s against etcd's v3 API (revkv or etcd), in
// alternating rounds.
//
//   revkv-lease-bench grant --compare 127.0.0.1:2379 127.0.0.1:22379 --clients 16 --rounds 5
//   revkv-lease-bench keepalive --compare 127.0.0.1:2379 127.0.0.1:22379 --leases 1000 --streams 8
//
// grant: `--clients` threads, each with its own connection, call LeaseGrant (TTL `--ttl`, ID chosen by
// the server) one at a time as fast as the server answers, for `--duration` seconds. After the round
// (untimed) the leases are revoked, so every round starts with the same lease table.
//
// keepalive: `--leases` leases are granted before the round; `--streams` LeaseKeepAlive streams (each on
// its own connection) renew them round-robin, each stream keeping `--inflight` requests outstanding (a
// writer thread sends while fewer are unanswered, a reader thread counts the answers). Every answer must
// carry the lease's granted TTL (a TTL 0 answer means the lease was lost: counted and reported). The
// leases are revoked after the round.
//
// Figures per round: operations/s and the latency p50/p99 (keepalive: from the send of a request to the
// receipt of its answer; both servers answer a stream's requests in order). With --compare, rounds
// alternate A B, B A, ... and the medians per endpoint and their ratio B/A... are printed.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clients/bench/histogram.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace {

using etcdserverpb::Lease;
using etcdserverpb::LeaseKeepAliveRequest;
using etcdserverpb::LeaseKeepAliveResponse;
using revkv::client::LatencyHistogram;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode;
  std::string endpoints = "127.0.0.1:2379";
  std::vector<std::string> compare;
  int rounds = 3;
  int clients = 16;
  int leases = 1000;
  int streams = 8;
  int inflight = 16;
  int64_t ttl = 60;
  double duration = 5;
};

struct RoundResult {
  double ops_per_second = 0;
  uint64_t p50_us = 0;
  uint64_t p99_us = 0;
  uint64_t errors = 0;  // failed grants, or keep-alives answered with TTL 0
};

std::shared_ptr<grpc::Channel> Channel(const std::string& endpoint, int id) {
  grpc::ChannelArguments args;
  args.SetInt("revkv.lease_bench.channel", id);  // a connection of its own
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

uint64_t MicrosSince(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count());
}

// Grants `count` leases over `threads` connections (untimed set-up); the IDs, or fewer on errors.
std::vector<int64_t> GrantMany(const std::string& endpoint, int count, int threads, int64_t ttl) {
  std::mutex mu;
  std::vector<int64_t> ids;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto stub = Lease::NewStub(Channel(endpoint, 1000 + t));
      for (int i = t; i < count; i += threads) {
        etcdserverpb::LeaseGrantRequest r;
        r.set_ttl(ttl);
        etcdserverpb::LeaseGrantResponse resp;
        grpc::ClientContext c;
        c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        if (!stub->LeaseGrant(&c, r, &resp).ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(resp.id());
      }
    });
  }
  for (auto& w : workers) w.join();
  return ids;
}

// Revokes `ids` over `threads` connections (untimed clean-up).
void RevokeAll(const std::string& endpoint, const std::vector<int64_t>& ids, int threads) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto stub = Lease::NewStub(Channel(endpoint, 2000 + t));
      for (size_t i = static_cast<size_t>(t); i < ids.size(); i += static_cast<size_t>(threads)) {
        etcdserverpb::LeaseRevokeRequest r;
        r.set_id(ids[i]);
        etcdserverpb::LeaseRevokeResponse resp;
        grpc::ClientContext c;
        c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        (void)stub->LeaseRevoke(&c, r, &resp);
      }
    });
  }
  for (auto& w : workers) w.join();
}

RoundResult GrantRound(const Options& o, const std::string& endpoint) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> errors{0};
  std::vector<std::vector<int64_t>> granted(static_cast<size_t>(o.clients));
  std::vector<LatencyHistogram> histograms(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < o.clients; ++t) {
    threads.emplace_back([&, t] {
      auto stub = Lease::NewStub(Channel(endpoint, t));
      while (!stop.load(std::memory_order_relaxed)) {
        etcdserverpb::LeaseGrantRequest r;
        r.set_ttl(o.ttl);
        etcdserverpb::LeaseGrantResponse resp;
        grpc::ClientContext c;
        c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        const auto sent = Clock::now();
        if (!stub->LeaseGrant(&c, r, &resp).ok()) {
          errors.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        histograms[static_cast<size_t>(t)].Record(MicrosSince(sent));
        granted[static_cast<size_t>(t)].push_back(resp.id());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  stop = true;
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  LatencyHistogram all;
  std::vector<int64_t> ids;
  for (size_t t = 0; t < granted.size(); ++t) {
    all.Merge(histograms[t]);
    ids.insert(ids.end(), granted[t].begin(), granted[t].end());
  }
  RevokeAll(endpoint, ids, o.clients);
  RoundResult r;
  r.ops_per_second = static_cast<double>(all.count()) / seconds;
  r.p50_us = all.Snapshot().ValueAtPercentile(50);
  r.p99_us = all.Snapshot().ValueAtPercentile(99);
  r.errors = errors.load();
  return r;
}

// One keep-alive stream renewing its share of the leases with `inflight` requests outstanding.
class KeepAliveStream {
 public:
  KeepAliveStream(const std::string& endpoint, int id, std::vector<int64_t> leases, int inflight, int64_t ttl)
      : stub_(Lease::NewStub(Channel(endpoint, id))),
        leases_(std::move(leases)),
        inflight_(inflight),
        ttl_(ttl) {
    rw_ = stub_->LeaseKeepAlive(&context_);
  }
  void Start(const std::atomic<bool>* stop) {
    writer_ = std::thread([this, stop] {
      for (size_t i = 0; !stop->load(std::memory_order_relaxed); ++i) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          room_.wait(lock, [&] { return static_cast<int>(sent_.size()) < inflight_ || broken_; });
          if (broken_) return;
          sent_.push_back(Clock::now());
        }
        LeaseKeepAliveRequest r;
        r.set_id(leases_[i % leases_.size()]);
        if (!rw_->Write(r)) return;
      }
      rw_->WritesDone();
    });
    reader_ = std::thread([this] {
      LeaseKeepAliveResponse resp;
      while (rw_->Read(&resp)) {
        Clock::time_point sent;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (sent_.empty()) break;  // an answer nobody asked for
          sent = sent_.front();
          sent_.pop_front();
        }
        room_.notify_one();
        histogram_.Record(MicrosSince(sent));
        if (resp.ttl() != ttl_) ++errors_;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        broken_ = true;
      }
      room_.notify_one();
    });
  }
  // Stops sending, waits for the answers in flight, ends the stream.
  void Finish() {
    if (writer_.joinable()) writer_.join();
    if (reader_.joinable()) reader_.join();
    (void)rw_->Finish();
  }
  const LatencyHistogram& histogram() const { return histogram_; }  // after Finish
  uint64_t errors() const { return errors_; }                       // after Finish

 private:
  std::unique_ptr<Lease::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<LeaseKeepAliveRequest, LeaseKeepAliveResponse>> rw_;
  const std::vector<int64_t> leases_;
  const int inflight_;
  const int64_t ttl_;
  std::mutex mu_;
  std::condition_variable room_;
  std::deque<Clock::time_point> sent_;  // under mu_: send times of the unanswered requests, in order
  bool broken_ = false;                 // under mu_: the stream ended
  std::thread writer_;
  std::thread reader_;
  LatencyHistogram histogram_;  // reader thread
  uint64_t errors_ = 0;         // reader thread
};

RoundResult KeepAliveRound(const Options& o, const std::string& endpoint) {
  const std::vector<int64_t> ids = GrantMany(endpoint, o.leases, 8, o.ttl);
  std::vector<std::unique_ptr<KeepAliveStream>> streams;
  for (int s = 0; s < o.streams; ++s) {
    std::vector<int64_t> mine;
    for (size_t i = static_cast<size_t>(s); i < ids.size(); i += static_cast<size_t>(o.streams))
      mine.push_back(ids[i]);
    if (mine.empty()) continue;
    streams.push_back(std::make_unique<KeepAliveStream>(endpoint, s, std::move(mine), o.inflight, o.ttl));
  }
  std::atomic<bool> stop{false};
  const auto start = Clock::now();
  for (auto& s : streams) s->Start(&stop);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  stop = true;
  LatencyHistogram all;
  RoundResult r;
  for (auto& s : streams) {
    s->Finish();
    all.Merge(s->histogram());
    r.errors += s->errors();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RevokeAll(endpoint, ids, 8);
  r.ops_per_second = static_cast<double>(all.count()) / seconds;
  r.p50_us = all.Snapshot().ValueAtPercentile(50);
  r.p99_us = all.Snapshot().ValueAtPercentile(99);
  if (ids.size() < static_cast<size_t>(o.leases)) r.errors += static_cast<size_t>(o.leases) - ids.size();
  return r;
}

void Print(const char* label, const std::string& endpoint, const std::string& what, int round,
           const RoundResult& r) {
  std::printf("%s %-22s round %d: %9.0f %s/s  latency p50 %6.2f ms p99 %7.2f ms%s\n", label, endpoint.c_str(),
              round, r.ops_per_second, what.c_str(), r.p50_us / 1000.0, r.p99_us / 1000.0,
              r.errors > 0 ? "  (errors!)" : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("revkv-lease-bench: lease grants/s and keep-alives/s for etcd's v3 API");
  app.add_option("mode", o.mode, "grant or keepalive")
      ->required()
      ->check(CLI::IsMember({"grant", "keepalive"}));
  app.add_option("--endpoints", o.endpoints, "the endpoint (host:port)");
  app.add_option("--compare", o.compare, "two endpoints, measured in alternating rounds")->expected(2);
  app.add_option("--rounds", o.rounds, "rounds per endpoint with --compare");
  app.add_option("--clients", o.clients, "grant: client threads, each with its own connection");
  app.add_option("--leases", o.leases, "keepalive: leases renewed round-robin");
  app.add_option("--streams", o.streams, "keepalive: LeaseKeepAlive streams (each its own connection)");
  app.add_option("--inflight", o.inflight, "keepalive: unanswered requests per stream");
  app.add_option("--ttl", o.ttl, "TTL of the leases granted (seconds)");
  app.add_option("--duration", o.duration, "seconds per round");
  CLI11_PARSE(app, argc, argv);
  const std::string what = o.mode == "grant" ? "grants" : "keep-alives";
  std::vector<std::string> targets = o.compare.empty() ? std::vector<std::string>{o.endpoints} : o.compare;
  std::vector<std::vector<RoundResult>> results(targets.size());
  const int rounds = o.compare.empty() ? 1 : o.rounds;
  bool errors = false;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < targets.size(); ++k) {
      const size_t t = round % 2 == 0 ? k : targets.size() - 1 - k;  // A B, B A, ...
      RoundResult r = o.mode == "grant" ? GrantRound(o, targets[t]) : KeepAliveRound(o, targets[t]);
      Print(t == 0 ? "A" : "B", targets[t], what, round, r);
      errors = errors || r.errors > 0;
      results[t].push_back(r);
    }
  }
  std::vector<double> medians;
  for (size_t t = 0; t < targets.size(); ++t) {
    auto median = [&](auto field) {
      std::vector<double> v;
      for (const auto& r : results[t]) v.push_back(static_cast<double>(field(r)));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    medians.push_back(median([](auto& r) { return r.ops_per_second; }));
    std::printf("median %s %-22s: %9.0f %s/s  latency p50 %6.2f ms p99 %7.2f ms\n", t == 0 ? "A" : "B",
                targets[t].c_str(), medians.back(), what.c_str(),
                median([](auto& r) { return r.p50_us; }) / 1000.0,
                median([](auto& r) { return r.p99_us; }) / 1000.0);
  }
  if (medians.size() == 2 && medians[1] > 0) std::printf("A / B: %.2f\n", medians[0] / medians[1]);
  return errors ? 1 : 0;
}
