// The fixture of revkv's end-to-end tests: a real revkv-server (cli_process.h) on free loopback ports
// with a fresh data directory, started for each test and stopped after it, and the revkv binary run
// against it.
#ifndef REVKV_TESTS_CLIENTS_CLI_CLI_FIXTURE_H_
#define REVKV_TESTS_CLIENTS_CLI_CLI_FIXTURE_H_

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/clients/cli/cli_process.h"

namespace revkv::client::testing {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }

  // `revkv --endpoints <server> args...` with `stdin_text` on its standard input.
  CommandResult Cli(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    return RunCommand(CommandLine(args), stdin_text);
  }

  // The same with no input, attached to pipes or to a pseudo-terminal.
  CommandResult CliAttached(const std::vector<std::string>& args, Attach attach) {
    return RunCommand(CommandLine(args), "", attach);
  }

  // Runs `revkv args...` and expects exit status 0 and nothing on stderr; returns stdout.
  std::string Ok(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    const CommandResult r = Cli(args, stdin_text);
    EXPECT_EQ(r.exit_code, 0) << Describe(args) << r.Describe();
    EXPECT_EQ(r.err, "") << Describe(args);
    return r.out;
  }

  // Runs `revkv --json args...`, expects exit status 0, and parses stdout.
  nlohmann::json Json(const std::vector<std::string>& args) {
    std::vector<std::string> with_json = {"--json"};
    with_json.insert(with_json.end(), args.begin(), args.end());
    const std::string out = Ok(with_json);
    nlohmann::json parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << Describe(with_json) << "stdout is not JSON:\n" << out;
    return parsed;
  }

  std::vector<std::string> CommandLine(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {REVKV_CLI_BINARY, "--endpoints", server_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  static std::string Describe(const std::vector<std::string>& args) {
    std::string text = "revkv";
    for (const std::string& a : args) text += " '" + a + "'";
    return text + "\n";
  }

  TestServer server_;
};

// A protobuf JSON int64/uint64 (a string) as a number.
inline int64_t JsonInt(const nlohmann::json& value) {
  return value.is_string() ? std::stoll(value.get<std::string>()) : value.get<int64_t>();
}

}  // namespace revkv::client::testing

#endif  // REVKV_TESTS_CLIENTS_CLI_CLI_FIXTURE_H_
