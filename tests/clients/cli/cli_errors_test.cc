// How revkv fails: an unreachable server and etcd errors exit 1 with a clear message, bad usage exits 2.
#include <gtest/gtest.h>

#include "tests/clients/cli/cli_fixture.h"

namespace revkv::client::testing {
namespace {

using CliErrors = CliTest;

TEST(CliUnreachable, ARefusedConnectionExitsOneNamingTheEndpoint) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(FreePort());  // nothing listens
  for (const std::vector<std::string>& args : {std::vector<std::string>{"get", "k"},
                                               {"put", "k", "v"},
                                               {"status"},
                                               {"gc", "stats"},
                                               {"gc", "watch"}}) {
    std::vector<std::string> argv = {REVKV_CLI_BINARY, "--endpoints", endpoint, "--dial-timeout", "3s"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 1) << r.Describe();
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("revkv: cannot reach " + endpoint + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
    // A refused connection fails at once rather than after --dial-timeout.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  }
}

TEST_F(CliErrors, AFutureRevisionIsAnEtcdErrorWithTheServersMessage) {
  const CommandResult r = Cli({"range", "k", "--rev", "999999"});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "revkv: etcdserver: mvcc: required revision is a future revision\n");
}

TEST_F(CliErrors, AnEmptyKeyIsAnEtcdError) {
  const CommandResult r = Cli({"put", "", "v"});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_EQ(r.err, "revkv: etcdserver: key is not provided\n");
}

TEST_F(CliErrors, BadUsageExitsTwoWithAMessage) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{}, "revkv: A subcommand is required"},
           {{"frobnicate"}, "revkv: unknown command \"frobnicate\""},
           {{"get"}, "revkv: key is required"},
           {{"put", "k"}, "revkv: value is required"},
           {{"get", "k", "--bogus"}, "revkv: "},
           {{"range", "a", "--prefix", "--from-key"},
            "revkv: give only one of RANGE_END, --prefix and --from-key"},
           {{"range", "a", "--limit", "-1"}, "revkv: "},
           {{"range", "a", "--sort-by", "size"}, "revkv: --sort-by: unknown target \"size\""},
           {{"range", "a", "--order", "up"}, "revkv: --order: unknown order \"up\""},
           {{"compact", "x"}, "revkv: "},
           {{"gc"}, "revkv: A subcommand is required"},
           {{"gc", "watch", "--interval", "1ms"}, "revkv: gc watch: --interval must be at least 10ms"},
           {{"gc", "watch", "--interval", "soon"}, "revkv: "},
           {{"--endpoints", "no-port", "get", "k"}, "revkv: --endpoints: endpoint \"no-port\""},
           {{"--cert", "/nonexistent.pem", "get", "k"}, "revkv: --cert and --key go together"}}) {
    const CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << Describe(args) << r.Describe();
    EXPECT_EQ(r.out, "") << Describe(args);
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << Describe(args) << r.Describe();
  }
}

TEST_F(CliErrors, HelpExitsZero) {
  const CommandResult r = Cli({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  for (const char* command : {"get", "put", "del", "range", "txn", "status", "compact", "checkpoint", "gc"}) {
    EXPECT_NE(r.out.find(std::string("  ") + command + " "), std::string::npos) << command << " in\n"
                                                                                << r.out;
  }
}

}  // namespace
}  // namespace revkv::client::testing
