// Backups and space against a real revkv-server with Debian's etcdctl: `etcdctl snapshot save` under a
// write load, `revkv-server --restore-snapshot`, and every key, revision and hash compared; damaged and
// foreign files refused; `etcdctl defrag` giving memory back after a mass delete and a compaction; the
// space quota recovered by delete, compact, defrag and `alarm disarm`.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The revision a snapshot file holds: its image is a checkpoint, whose header has it at byte 16.
int64_t SnapshotRevision(const std::string& bytes) {
  int64_t revision = 0;
  if (bytes.size() >= 24) std::memcpy(&revision, bytes.data() + 16, sizeof revision);
  return revision;
}

CommandResult Restore(const std::string& file, const std::string& dir) {
  return RunCommand({REVKV_SERVER_BINARY, "--restore-snapshot", file, "--data-dir", dir});
}

// Every key-value at `revision` (0: the newest), fields and all.
std::vector<std::string> Everything(etcdserverpb::KV::Stub* kv, int64_t revision, int64_t* header_revision) {
  auto reply =
      Call(kv, &etcdserverpb::KV::Stub::Range, RangeOf(std::string(1, '\0'), std::string(1, '\0'), revision));
  EXPECT_TRUE(IsOk(reply.status));
  if (header_revision != nullptr) *header_revision = reply.response.header().revision();
  std::vector<std::string> out;
  for (const auto& k : reply.response.kvs()) {
    out.push_back(k.key() + "=" + k.value() + " c" + std::to_string(k.create_revision()) + " m" +
                  std::to_string(k.mod_revision()) + " v" + std::to_string(k.version()) + " l" +
                  std::to_string(k.lease()));
  }
  return out;
}

uint32_t HashKv(etcdserverpb::Maintenance::Stub* m, int64_t revision) {
  etcdserverpb::HashKVRequest r;
  r.set_revision(revision);
  auto reply = Call(m, &etcdserverpb::Maintenance::Stub::HashKV, r);
  EXPECT_TRUE(IsOk(reply.status));
  return reply.response.hash();
}

// `etcdctl snapshot save` while a writer keeps writing, then a restore into a new directory: the
// restored server holds exactly the state of the snapshot's revision (every key, value, create and mod
// revision, version and lease; the leases; HashKV), at that revision, and takes writes after it. The
// writer was not stopped: its writes went on during the save.
TEST(Backup, SnapshotSaveUnderLoadRestoresEveryKeyAndRevision) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerOptions options;
  options.extra_flags = {"--history-revisions=1000000"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  auto channel = server.NewChannel();
  auto kv = etcdserverpb::KV::NewStub(channel);
  auto lease = etcdserverpb::Lease::NewStub(channel);
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_id(4242);
  grant.set_ttl(3600);
  ASSERT_TRUE(IsOk(Call(lease.get(), &etcdserverpb::Lease::Stub::LeaseGrant, grant).status));
  for (int batch = 0; batch < 40; ++batch) {  // 4,000 keys, a tenth of them on the lease
    etcdserverpb::TxnRequest t;
    for (int i = 0; i < 100; ++i) {
      const int n = batch * 100 + i;
      etcdserverpb::PutRequest p =
          PutOf("key/" + std::to_string(n), std::string(200, static_cast<char>('a' + n % 26)));
      if (n % 10 == 0) p.set_lease(4242);
      *t.add_success() = OpOf(p);
    }
    ASSERT_TRUE(IsOk(Call(kv.get(), &etcdserverpb::KV::Stub::Txn, t).status));
  }

  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    auto writer_kv = etcdserverpb::KV::NewStub(server.NewChannel());
    for (int i = 0; !stop.load(); ++i) {
      auto reply = Call(writer_kv.get(), &etcdserverpb::KV::Stub::Put,
                        PutOf("load/" + std::to_string(i % 5000), "written " + std::to_string(i)));
      if (reply.status.ok()) ++written;
    }
  });
  while (written.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  TempDir scratch;
  const std::string file = scratch.path() + "/backup.db";
  const int before_save = written.load();
  const CommandResult saved = Etcdctl(server, {"snapshot", "save", file});
  const int after_save = written.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  writer.join();
  ASSERT_EQ(saved.exit_code, 0) << saved.Describe();
  EXPECT_NE(saved.out.find("Snapshot saved at " + file), std::string::npos) << saved.Describe();
  EXPECT_GT(after_save, before_save) << "no write completed while the snapshot was taken";
  const std::string bytes = ReadFile(file);
  EXPECT_EQ(bytes.size() % 512, 32u);
  const int64_t revision = SnapshotRevision(bytes);
  ASSERT_GT(revision, 41);

  ServerProcess restored;
  const CommandResult restore = Restore(file, restored.data_dir());
  ASSERT_EQ(restore.exit_code, 0) << restore.Describe();
  EXPECT_NE(restore.out.find("revision " + std::to_string(revision)), std::string::npos)
      << restore.Describe();
  ASSERT_TRUE(restored.Start());
  auto restored_channel = restored.NewChannel();
  auto restored_kv = etcdserverpb::KV::NewStub(restored_channel);
  int64_t header = 0;
  const std::vector<std::string> expected = Everything(kv.get(), revision, nullptr);
  const std::vector<std::string> actual = Everything(restored_kv.get(), 0, &header);
  EXPECT_EQ(header, revision);
  EXPECT_EQ(actual.size(), expected.size());
  EXPECT_TRUE(actual == expected) << "the restored state differs from revision " << revision;
  auto m1 = etcdserverpb::Maintenance::NewStub(channel);
  auto m2 = etcdserverpb::Maintenance::NewStub(restored_channel);
  EXPECT_EQ(HashKv(m2.get(), 0), HashKv(m1.get(), revision));
  auto restored_lease = etcdserverpb::Lease::NewStub(restored_channel);
  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(4242);
  ttl.set_keys(true);
  auto lived = Call(restored_lease.get(), &etcdserverpb::Lease::Stub::LeaseTimeToLive, ttl);
  ASSERT_TRUE(IsOk(lived.status));
  EXPECT_EQ(lived.response.grantedttl(), 3600);
  EXPECT_EQ(lived.response.keys_size(), 400);
  // Writes continue after the snapshot's revision.
  auto put = Call(restored_kv.get(), &etcdserverpb::KV::Stub::Put, PutOf("after", "restore"));
  ASSERT_TRUE(IsOk(put.status));
  EXPECT_EQ(put.response.header().revision(), revision + 1);
}

// A damaged, truncated or foreign file is refused with a clear error and nothing is left behind; a
// data directory that holds anything is refused too.
TEST(Backup, RestoreRefusesDamagedTruncatedAndForeignFilesAndAUsedDirectory) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 50; ++i) ASSERT_EQ(Etcdctl(server, {"put", "k" + std::to_string(i), "v"}).exit_code, 0);
  TempDir scratch;
  const std::string file = scratch.path() + "/good.db";
  ASSERT_EQ(Etcdctl(server, {"snapshot", "save", file}).exit_code, 0);
  const std::string good = ReadFile(file);

  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x20;
  WriteFile(scratch.path() + "/flipped.db", flipped);
  const std::string target = scratch.path() + "/restored";
  CommandResult r = Restore(scratch.path() + "/flipped.db", target);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("is damaged: its SHA-256 checksum does not match"), std::string::npos) << r.Describe();
  EXPECT_FALSE(fs::exists(target));

  WriteFile(scratch.path() + "/truncated.db", good.substr(0, good.size() - 100));
  r = Restore(scratch.path() + "/truncated.db", target);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("is truncated or not a revkv snapshot"), std::string::npos) << r.Describe();
  EXPECT_FALSE(fs::exists(target));

  // A file whose checksum holds but whose image was damaged before it was summed: the image's own CRC.
  std::string bad_image = good.substr(0, good.size() - 32);
  bad_image[100] ^= 0x01;
  {
    // Re-sum it as a server would have: the SHA-256 of everything before.
    WriteFile(scratch.path() + "/body", bad_image);
    const CommandResult sum = RunCommand({"/usr/bin/sha256sum", scratch.path() + "/body"});
    ASSERT_EQ(sum.exit_code, 0) << sum.Describe();
    std::string digest;
    for (size_t i = 0; i + 1 < 64 + 1 && i < sum.out.size(); i += 2) {
      digest.push_back(static_cast<char>(std::stoi(sum.out.substr(i, 2), nullptr, 16)));
    }
    WriteFile(scratch.path() + "/bad_image.db", bad_image + digest);
  }
  r = Restore(scratch.path() + "/bad_image.db", target);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("its image is damaged"), std::string::npos) << r.Describe();
  EXPECT_FALSE(fs::exists(target));

  fs::create_directories(target);
  WriteFile(target + "/something", "x");
  r = Restore(file, target);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("is not empty"), std::string::npos) << r.Describe();
  EXPECT_EQ(ReadFile(target + "/something"), "x");

  // The good file restores.
  r = Restore(file, scratch.path() + "/fresh");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// An etcd snapshot (a bolt database with etcd's checksum) is refused as foreign.
TEST(Backup, AnEtcdSnapshotIsRefusedAsForeign) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  if (!FlavorAvailable(Flavor::kEtcd)) REVKV_MISSING_TOOL() << "etcd is not installed";
  ServerOptions options;
  options.flavor = Flavor::kEtcd;
  ServerProcess etcd(options);
  ASSERT_TRUE(etcd.Start());
  ASSERT_EQ(Etcdctl(etcd, {"put", "a", "1"}).exit_code, 0);
  TempDir scratch;
  const std::string file = scratch.path() + "/etcd.db";
  ASSERT_EQ(Etcdctl(etcd, {"snapshot", "save", file}).exit_code, 0);
  const CommandResult r = Restore(file, scratch.path() + "/restored");
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("not a revkv snapshot"), std::string::npos) << r.Describe();
}

// The resident set of a process, from /proc/<pid>/status.
uint64_t ResidentKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// `etcdctl defrag` gives memory back: 96 MiB of values are written, deleted and compacted away; the
// defragmentation (a major collection that returns free pages, and malloc's free memory) lowers the
// server's resident set by most of it, and the store's bytes (dbSize) with it.
TEST(Backup, DefragLowersResidentMemoryAfterAMassDeleteAndCompaction) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto kv = etcdserverpb::KV::NewStub(server.NewChannel());
  const std::string value(1024, 'v');
  for (int batch = 0; batch < 960; ++batch) {  // 96,000 keys of 1 KiB
    etcdserverpb::TxnRequest t;
    for (int i = 0; i < 100; ++i)
      *t.add_success() = OpOf(PutOf("bulk/" + std::to_string(batch * 100 + i), value));
    ASSERT_TRUE(IsOk(Call(kv.get(), &etcdserverpb::KV::Stub::Txn, t).status));
  }
  auto deleted = Call(kv.get(), &etcdserverpb::KV::Stub::DeleteRange, DeleteOf("bulk/", PrefixEnd("bulk/")));
  ASSERT_TRUE(IsOk(deleted.status));
  ASSERT_EQ(deleted.response.deleted(), 96000);
  const int64_t revision = deleted.response.header().revision();
  ASSERT_EQ(Etcdctl(server, {"compact", std::to_string(revision)}).exit_code, 0);
  auto db_size = [&] {
    const CommandResult r = Etcdctl(server, {"endpoint", "status", "-w", "json"});
    return ParseJson(r.out)[0]["Status"].value("dbSizeInUse", int64_t{0});
  };
  const uint64_t before = ResidentKiB(server.pid());
  const int64_t bytes_before = db_size();
  const CommandResult defrag = Etcdctl(server, {"defrag"});
  ASSERT_EQ(defrag.exit_code, 0) << defrag.Describe();
  EXPECT_EQ(defrag.out, "Finished defragmenting etcd member[" + server.address() + "]\n");
  const uint64_t after = ResidentKiB(server.pid());
  const int64_t bytes_after = db_size();
  std::printf("resident %llu -> %llu KiB; store bytes %lld -> %lld\n",
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(after),
              static_cast<long long>(bytes_before), static_cast<long long>(bytes_after));
  EXPECT_LT(after + 64 * 1024, before) << "defrag gave back less than 64 MiB of the ~96 MiB deleted";
  EXPECT_LT(bytes_after, 16 << 20);
  EXPECT_NE(server.Log().find("finished defragment"), std::string::npos);
}

// The quota's recovery as etcd documents it: NOSPACE, then delete, compact, defrag, disarm, and writes
// work again; disarming without defragmenting only lets the next write raise the alarm again.
TEST(Backup, QuotaRecoveryDeleteCompactDefragDisarm) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerOptions options;
  options.extra_flags = {"--quota-backend-bytes=8388608"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  const std::string value(100 * 1024, 'x');
  int accepted = 0;
  for (; accepted < 200; ++accepted) {
    const CommandResult r = Etcdctl(server, {"put", "fill/" + std::to_string(accepted)}, value);
    if (r.exit_code != 0) {
      EXPECT_NE(r.err.find("etcdserver: mvcc: database space exceeded"), std::string::npos) << r.Describe();
      break;
    }
  }
  ASSERT_LT(accepted, 200);
  EXPECT_NE(Etcdctl(server, {"alarm", "list"}).out.find("alarm:NOSPACE"), std::string::npos);
  ASSERT_EQ(Etcdctl(server, {"del", "fill/", "--prefix"}).exit_code, 0);
  const nlohmann::json status = ParseJson(Etcdctl(server, {"endpoint", "status", "-w", "json"}).out);
  const int64_t revision = status[0]["Status"]["header"]["revision"];
  ASSERT_EQ(Etcdctl(server, {"compact", std::to_string(revision)}).exit_code, 0);
  ASSERT_EQ(Etcdctl(server, {"defrag"}).exit_code, 0);
  ASSERT_EQ(Etcdctl(server, {"alarm", "disarm"}).exit_code, 0);
  EXPECT_EQ(Etcdctl(server, {"alarm", "list"}).out, "");
  for (int i = 0; i < 10; ++i) {
    const CommandResult r = Etcdctl(server, {"put", "again/" + std::to_string(i)}, value);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
  }
}

}  // namespace
}  // namespace revkv::integration
