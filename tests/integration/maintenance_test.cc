// etcd's Maintenance service against a real revkv-server, each case also against etcd 3.4 where the
// expectation is etcd's: alarms and the space quota (--quota-backend-bytes, NOSPACE, `etcdctl alarm
// list/disarm`), driven with Debian's etcdctl and raw gRPC calls.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

constexpr char kNoSpace[] = "etcdserver: mvcc: database space exceeded";

class Maintenance : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
  }
  void StartWith(std::vector<std::string> flags) {
    ServerOptions options;
    options.flavor = GetParam();
    options.extra_flags = std::move(flags);
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
  }
  CommandResult Ctl(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    return Etcdctl(*server_, args, stdin_text);
  }
  // Runs etcdctl and expects exit code 0; returns its stdout.
  std::string Run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    const CommandResult r = Ctl(args, stdin_text);
    EXPECT_EQ(r.exit_code, 0) << "etcdctl " << ::testing::PrintToString(args) << ": " << r.Describe();
    return r.out;
  }
  nlohmann::json RunJson(std::vector<std::string> args) {
    args.push_back("-w");
    args.push_back("json");
    const std::string out = Run(args);
    nlohmann::json j = ParseJson(out);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << out;
    return j.is_discarded() ? nlohmann::json::object() : j;
  }
  uint64_t MemberId() {
    const nlohmann::json status = RunJson({"endpoint", "status"});
    return status[0]["Status"]["header"].value("member_id", uint64_t{0});
  }
  // Puts 100 KiB values under "fill/" until the server refuses one; returns the refusal.
  CommandResult FillUntilRefused(int max_puts = 400) {
    const std::string value(100 * 1024, 'x');
    for (int i = 0; i < max_puts; ++i) {
      CommandResult r = Ctl({"put", "fill/" + std::to_string(i)}, value);
      if (r.exit_code != 0) return r;
    }
    ADD_FAILURE() << max_puts << " puts of 100 KiB were all accepted";
    return CommandResult();
  }

  std::unique_ptr<ServerProcess> server_;
};

// --quota-backend-bytes: a Put that would pass the quota raises NOSPACE for this member and is refused
// with etcd's exact error; the alarm is listed (etcdctl alarm list, -w json, endpoint status's errors);
// reads, deletes, lease revokes and compaction work under it, Puts and LeaseGrants do not; `alarm
// disarm` answers the alarm it cleared, and with the space still used the next Put raises it again.
TEST_P(Maintenance, TheQuotaRaisesNoSpaceAndRefusesOnlyWhatAddsData) {
  StartWith({"--quota-backend-bytes=4194304"});
  Run({"put", "a", "1"});
  const std::string lease_out = Run({"lease", "grant", "600"});
  const std::string lease_id = lease_out.substr(6, lease_out.find(' ', 6) - 6);  // "lease <id> granted..."
  const CommandResult refused = FillUntilRefused();
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(std::string("Error: ") + kNoSpace), std::string::npos) << refused.Describe();
  const uint64_t member = MemberId();
  ASSERT_NE(member, 0u);
  const std::string alarm_text = "memberID:" + std::to_string(member) + " alarm:NOSPACE \n";
  EXPECT_EQ(Run({"alarm", "list"}), alarm_text);
  const nlohmann::json listed = RunJson({"alarm", "list"});
  EXPECT_EQ(listed,
            nlohmann::json::parse("{\"alarms\":[{\"memberID\":" + std::to_string(member) + ",\"alarm\":1}]}"))
      << listed.dump();  // no header: etcd's AlarmResponse has none
  const nlohmann::json status = RunJson({"endpoint", "status"});
  EXPECT_EQ(status[0]["Status"]["errors"],
            nlohmann::json::array({alarm_text.substr(0, alarm_text.size() - 1)}))
      << status.dump();

  // What adds data is refused, even small.
  const CommandResult small = Ctl({"put", "b", "1"});
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.err.find(kNoSpace), std::string::npos) << small.Describe();
  const CommandResult grant = Ctl({"lease", "grant", "60"});
  EXPECT_NE(grant.exit_code, 0);
  EXPECT_NE(grant.err.find(kNoSpace), std::string::npos) << grant.Describe();
  const CommandResult txn_put = Ctl({"txn", "-i"}, "\nput b 1\n\n\n");
  EXPECT_NE(txn_put.err.find(kNoSpace), std::string::npos) << txn_put.Describe();
  // What reads or frees space is not.
  EXPECT_EQ(Run({"get", "a"}), "a\n1\n");
  const std::string deleted = Run({"del", "fill/", "--prefix"});  // however many fitted
  EXPECT_GT(std::atoi(deleted.c_str()), 10) << deleted;
  EXPECT_EQ(Run({"lease", "revoke", lease_id}), "lease " + lease_id + " revoked\n");
  const nlohmann::json now = RunJson({"get", "a"});
  const int64_t revision = now["header"]["revision"];
  EXPECT_EQ(Run({"compact", std::to_string(revision)}),
            "compacted revision " + std::to_string(revision) + "\n");
  EXPECT_TRUE(Run({"txn", "-i"}, "\ndel a\n\n\n").ends_with("SUCCESS\n\n1\n"));

  // Disarm answers the alarm it cleared; the bytes are still in use (neither etcd's file nor revkv's heap
  // shrinks without a defragmentation), so the next Put raises NOSPACE again.
  EXPECT_EQ(Run({"alarm", "disarm"}), alarm_text);
  EXPECT_EQ(Run({"alarm", "list"}), "");
  EXPECT_EQ(RunJson({"alarm", "list"}), nlohmann::json::object());
  const CommandResult again = Ctl({"put", "c"}, std::string(200 * 1024, 'y'));
  EXPECT_NE(again.err.find(kNoSpace), std::string::npos) << again.Describe();
  EXPECT_EQ(Run({"alarm", "list"}), alarm_text);
}

// etcd's Alarm by hand: ACTIVATE of any member and type is kept and answered, activating it again
// changes nothing, DEACTIVATE answers what it cleared (nothing for an inactive pair), GET filters by
// type; CORRUPT refuses writes ("etcdserver: corrupt cluster") but not reads, and the alarm survives a
// restart (revkv logs it; etcd keeps it in its backend).
TEST_P(Maintenance, AlarmsByHandAsEtcdAndTheySurviveARestart) {
  StartWith({});
  Run({"put", "a", "1"});
  auto stub = etcdserverpb::Maintenance::NewStub(server_->NewChannel());
  auto call = [&](etcdserverpb::AlarmRequest::AlarmAction action, uint64_t member,
                  etcdserverpb::AlarmType type, etcdserverpb::AlarmResponse* out) {
    etcdserverpb::AlarmRequest r;
    r.set_action(action);
    r.set_memberid(member);
    r.set_alarm(type);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub->Alarm(&context, r, out);
  };
  using A = etcdserverpb::AlarmRequest;
  etcdserverpb::AlarmResponse out;
  // NOSPACE first: etcd applies the alarm activated last first, and CORRUPT must win here as after a
  // restart (where etcd restores NOSPACE's refusals under CORRUPT's).
  ASSERT_TRUE(call(A::ACTIVATE, 78, etcdserverpb::NOSPACE, &out).ok());
  out.Clear();
  ASSERT_TRUE(call(A::ACTIVATE, 77, etcdserverpb::CORRUPT, &out).ok());
  ASSERT_EQ(out.alarms_size(), 1);
  EXPECT_EQ(out.alarms(0).memberid(), 77u);
  EXPECT_EQ(out.alarms(0).alarm(), etcdserverpb::CORRUPT);
  EXPECT_FALSE(out.has_header());
  out.Clear();
  ASSERT_TRUE(call(A::ACTIVATE, 77, etcdserverpb::CORRUPT, &out).ok());
  EXPECT_EQ(out.alarms_size(), 1);
  out.Clear();
  ASSERT_TRUE(call(A::GET, 0, etcdserverpb::NOSPACE, &out).ok());
  ASSERT_EQ(out.alarms_size(), 1);
  EXPECT_EQ(out.alarms(0).memberid(), 78u);
  out.Clear();
  ASSERT_TRUE(call(A::DEACTIVATE, 99, etcdserverpb::NOSPACE, &out).ok());
  EXPECT_EQ(out.alarms_size(), 0);

  const CommandResult put = Ctl({"put", "b", "2"});
  EXPECT_NE(put.err.find("etcdserver: corrupt cluster"), std::string::npos) << put.Describe();
  EXPECT_EQ(Run({"get", "a"}), "a\n1\n");

  ASSERT_TRUE(server_->Stop());
  ASSERT_TRUE(server_->Start());
  stub = etcdserverpb::Maintenance::NewStub(server_->NewChannel());
  out.Clear();
  ASSERT_TRUE(call(A::GET, 0, etcdserverpb::NONE, &out).ok());
  EXPECT_EQ(out.alarms_size(), 2);
  const CommandResult after = Ctl({"put", "b", "2"});
  EXPECT_NE(after.err.find("etcdserver: corrupt cluster"), std::string::npos) << after.Describe();
  ASSERT_TRUE(call(A::DEACTIVATE, 77, etcdserverpb::CORRUPT, &out).ok());
  ASSERT_TRUE(call(A::DEACTIVATE, 78, etcdserverpb::NOSPACE, &out).ok());
  EXPECT_EQ(Run({"put", "b", "2"}), "OK\n");
}

// `etcdctl endpoint hashkv` as etcd answers it: the hash, the current revision in the header, the
// compaction (-1 before any); a revision at the compaction answers "compacted". `move-leader` to a
// member that does not exist answers etcd's "bad leader transferee".
TEST_P(Maintenance, EndpointHashKvAndMoveLeaderAnswerAsEtcd) {
  StartWith({});
  Run({"put", "a", "1"});
  Run({"put", "b", "2"});
  const nlohmann::json hashkv = RunJson({"endpoint", "hashkv"});
  ASSERT_EQ(hashkv.size(), 1u) << hashkv.dump();
  EXPECT_EQ(hashkv[0]["Endpoint"], server_->address());
  EXPECT_EQ(hashkv[0]["HashKV"]["header"]["revision"], 3);
  EXPECT_EQ(hashkv[0]["HashKV"]["compact_revision"], -1);
  EXPECT_TRUE(hashkv[0]["HashKV"]["hash"].is_number_unsigned());
  const nlohmann::json at2 = RunJson({"endpoint", "hashkv", "--rev=2"});
  EXPECT_NE(at2[0]["HashKV"]["hash"], hashkv[0]["HashKV"]["hash"]);
  EXPECT_EQ(at2[0]["HashKV"]["header"]["revision"], 3);
  Run({"compact", "2"});
  const CommandResult compacted = Ctl({"endpoint", "hashkv", "--rev=2"});
  EXPECT_NE(compacted.err.find("etcdserver: mvcc: required revision has been compacted"), std::string::npos)
      << compacted.Describe();
  const nlohmann::json after = RunJson({"endpoint", "hashkv"});
  EXPECT_EQ(after[0]["HashKV"]["compact_revision"], 2);
  EXPECT_EQ(after[0]["HashKV"]["hash"], hashkv[0]["HashKV"]["hash"]);  // the state did not change
  const CommandResult move = Ctl({"move-leader", "1234"});
  EXPECT_NE(move.exit_code, 0);
  EXPECT_NE(move.err.find("etcdserver: bad leader transferee"), std::string::npos) << move.Describe();
}

// The hash of a state depends only on that state: the same before and after a restart, at the newest
// revision and at a past one.
TEST(MaintenanceRevkv, EndpointHashKvIsEqualAcrossARestart) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(Etcdctl(server, {"put", "k" + std::to_string(i % 7), "v" + std::to_string(i)}).exit_code, 0);
  }
  auto hashes = [&] {
    std::vector<nlohmann::json> out;
    for (const char* rev : {"0", "10", "25"}) {
      const CommandResult r =
          Etcdctl(server, {"endpoint", "hashkv", std::string("--rev=") + rev, "-w", "json"});
      EXPECT_EQ(r.exit_code, 0) << r.Describe();
      out.push_back(ParseJson(r.out)[0]["HashKV"]["hash"]);
    }
    return out;
  };
  const std::vector<nlohmann::json> before = hashes();
  ASSERT_TRUE(server.Stop());
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(hashes(), before);
  ASSERT_TRUE(server.Kill());  // and after a crash
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(hashes(), before);
}

INSTANTIATE_TEST_SUITE_P(Servers, Maintenance, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

}  // namespace
}  // namespace revkv::integration
