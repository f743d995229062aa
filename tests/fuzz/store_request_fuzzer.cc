// Fuzz target: decoding a KV request from the wire and applying it to the store.
//
// Input: one byte choosing the message (Range, Put, DeleteRange, Txn, Compaction; etcdserverpb), then
// its protobuf encoding, decoded with ParseFromArray as the gRPC layer decodes a request. Undecodable
// bytes end the input. Each input gets a fresh Store holding a few keys with some history, inside the
// runtime (one registered thread).
//
// Checks: no crash, leak or undefined behaviour, and the store stays consistent: a request that fails
// changes nothing (same revision, same key count, same key-values); reads and compactions never change
// the revision or the data; a write that succeeds moves the revision by at most one, by exactly one
// when the data changed, and its response header carries that revision; the key count always matches
// the keys there are.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "etcdserverpb/rpc.pb.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/store.h"
#include "tests/fuzz/fuzz_check.h"

namespace revkv::server::fuzz {
namespace {

enum Kind : uint8_t { kRange, kPut, kDeleteRange, kTxn, kCompact, kKinds };

using Snapshot = std::vector<std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t>>;

Snapshot Dump(Store& store) {
  Snapshot out;
  int64_t at = 0;
  const absl::Status s = store.ForEachAt(
      0,
      [&](const StoredKeyValue& kv) {
        out.emplace_back(kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease);
      },
      &at);
  FUZZ_CHECK(s.ok(), "ForEachAt: %s", s.ToString().c_str());
  return out;
}

// A store at revision 8: keys a, b, foo, foo/1, foo/2, zz (b and foo/1 twice), then c deleted.
std::unique_ptr<Store> MakeStore() {
  StoreOptions options;
  options.max_txn_ops = 16;
  options.max_request_bytes = 64 << 10;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Create(options, nullptr);
  FUZZ_CHECK(store.ok(), "Store::Create: %s", store.status().ToString().c_str());
  for (const char* key : {"a", "b", "foo", "foo/1", "foo/2", "b", "c"}) {
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(std::string("value of ") + key);
    FUZZ_CHECK((*store)->Put(put).ok(), "seeding Put");
  }
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("c");
  FUZZ_CHECK((*store)->DeleteRange(del).ok(), "seeding DeleteRange");
  return std::move(*store);
}

// Checks a write's outcome against the state before it.
template <class Response>
void CheckWrite(Store& store, const absl::StatusOr<WriteResult<Response>>& result, int64_t revision_before,
                const Snapshot& before) {
  const Snapshot after = Dump(store);
  if (!result.ok()) {
    FUZZ_CHECK(store.Revision() == revision_before && after == before,
               "a failed write (%s) changed the store: revision %lld -> %lld",
               result.status().ToString().c_str(), static_cast<long long>(revision_before),
               static_cast<long long>(store.Revision()));
    return;
  }
  const int64_t revision = result->revision;
  FUZZ_CHECK(revision == revision_before || revision == revision_before + 1, "revision %lld -> %lld",
             static_cast<long long>(revision_before), static_cast<long long>(revision));
  FUZZ_CHECK(store.Revision() == revision, "the store is at %lld, the write says %lld",
             static_cast<long long>(store.Revision()), static_cast<long long>(revision));
  FUZZ_CHECK(after == before || revision == revision_before + 1, "the data changed without a new revision");
  FUZZ_CHECK(result->response.header().revision() == revision, "response header revision %lld, write at %lld",
             static_cast<long long>(result->response.header().revision()), static_cast<long long>(revision));
}

void Run(const uint8_t* data, size_t size) {
  if (size < 1 || data[0] >= kKinds) return;
  const Kind kind = static_cast<Kind>(data[0]);
  const void* bytes = data + 1;
  const int length = static_cast<int>(size - 1);
  etcdserverpb::RangeRequest range;
  etcdserverpb::PutRequest put;
  etcdserverpb::DeleteRangeRequest delete_range;
  etcdserverpb::TxnRequest txn;
  etcdserverpb::CompactionRequest compact;
  bool decoded = false;
  switch (kind) {
    case kRange:
      decoded = range.ParseFromArray(bytes, length);
      break;
    case kPut:
      decoded = put.ParseFromArray(bytes, length);
      break;
    case kDeleteRange:
      decoded = delete_range.ParseFromArray(bytes, length);
      break;
    case kTxn:
      decoded = txn.ParseFromArray(bytes, length);
      break;
    case kCompact:
      decoded = compact.ParseFromArray(bytes, length);
      break;
    default:
      break;
  }
  if (!decoded) return;

  std::unique_ptr<Store> store = MakeStore();
  const int64_t revision_before = store->Revision();
  const Snapshot before = Dump(*store);
  FUZZ_CHECK(store->KeyCount() == static_cast<int64_t>(before.size()), "key count %lld, %zu keys",
             static_cast<long long>(store->KeyCount()), before.size());
  switch (kind) {
    case kRange: {
      absl::StatusOr<etcdserverpb::RangeResponse> r = store->Range(range);
      if (r.ok() && !range.count_only() && range.limit() <= 0 && range.min_mod_revision() == 0 &&
          range.max_mod_revision() == 0 && range.min_create_revision() == 0 &&
          range.max_create_revision() == 0) {
        FUZZ_CHECK(r->kvs_size() == r->count(), "%d key-values, count %lld", r->kvs_size(),
                   static_cast<long long>(r->count()));
      }
      FUZZ_CHECK(store->Revision() == revision_before && Dump(*store) == before, "a Range changed the store");
      break;
    }
    case kPut:
      CheckWrite(*store, store->Put(put), revision_before, before);
      break;
    case kDeleteRange:
      CheckWrite(*store, store->DeleteRange(delete_range), revision_before, before);
      break;
    case kTxn:
      CheckWrite(*store, store->Txn(txn), revision_before, before);
      break;
    case kCompact: {
      absl::StatusOr<etcdserverpb::CompactionResponse> r = store->Compact(compact);
      FUZZ_CHECK(store->Revision() == revision_before && Dump(*store) == before,
                 "a Compact changed the store");
      if (r.ok()) {
        FUZZ_CHECK(store->CompactRevision() == compact.revision(), "compacted to %lld, asked %lld",
                   static_cast<long long>(store->CompactRevision()),
                   static_cast<long long>(compact.revision()));
      }
      break;
    }
    default:
      break;
  }
  const Snapshot after = Dump(*store);
  FUZZ_CHECK(store->KeyCount() == static_cast<int64_t>(after.size()), "key count %lld, %zu keys",
             static_cast<long long>(store->KeyCount()), after.size());
}

}  // namespace
}  // namespace revkv::server::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  revkv::runtime::HeapOptions options;
  options.max_heap_bytes = size_t{512} << 20;
  revkv::runtime::InitializeRuntime(options);
  // The fuzzing thread stays registered for the whole run.
  static revkv::runtime::ThreadRegistration registration("fuzz");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  revkv::server::fuzz::Run(data, size);
  return 0;
}
