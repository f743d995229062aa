// Fuzz target: the configuration parser, through both of its inputs.
//
// Input: the bytes of a TOML file, read by ApplyConfigFile (and by ParseCommandLine through --config);
// the same bytes split on NULs and newlines are a command line for ParseCommandLine. Arguments naming a
// config file of their own are dropped (the parser would read whatever file they name).
//
// Checks: no crash, leak, undefined behaviour or escaping exception (toml++ and CLI11 throw; the
// parser must turn every throw into a status); every error is InvalidArgument with a message, and a
// file's errors name the file; a configuration that parses describes itself.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/config/config.h"
#include "server/config/config_file.h"
#include "tests/fuzz/fuzz_check.h"

namespace revkv::server::fuzz {
namespace {

// One file per process, rewritten for every input.
const std::string& ConfigPath() {
  static const std::string* path = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/revkv-fuzz-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) std::abort();
    ::close(fd);
    std::atexit([] { std::remove(ConfigPath().c_str()); });
    return new std::string(pattern);
  }();
  return *path;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

void CheckError(const absl::Status& status) {
  FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument, "unexpected error: %s",
             status.ToString().c_str());
  FUZZ_CHECK(!status.message().empty(), "an error without a message");
}

void Run(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string& path = ConfigPath();
  WriteFile(path, input);

  // As a file.
  ServerConfig config;
  const absl::Status applied = config::ApplyConfigFile(path, config);
  if (applied.ok()) {
    (void)config.Describe();
  } else {
    CheckError(applied);
    FUZZ_CHECK(applied.message().find(path) != std::string_view::npos, "the error does not name the file: %s",
               applied.ToString().c_str());
  }
  absl::StatusOr<CommandLine> with_file = ParseCommandLine({"--config", path});
  if (with_file.ok()) {
    FUZZ_CHECK(applied.ok(), "the file fails alone (%s) but parses through --config",
               applied.ToString().c_str());
    (void)with_file->config.Describe();
  } else {
    CheckError(with_file.status());
  }

  // As a command line.
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i <= input.size(); ++i) {
    if (i == input.size() || input[i] == '\0' || input[i] == '\n') {
      args.emplace_back(input.substr(start, i - start));
      start = i + 1;
    }
  }
  for (const std::string& arg : args) {
    if (arg.find("-config") != std::string::npos) return;
  }
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(args);
  if (parsed.ok()) {
    if (!parsed->exit_text.has_value()) {
      (void)parsed->config.Describe();
      FUZZ_CHECK(parsed->config.workers >= 1 && parsed->config.checkpoint_keep >= 1 &&
                     parsed->config.member_id != 0 && parsed->config.cluster_id != 0,
                 "an invalid configuration was accepted:\n%s", parsed->config.Describe().c_str());
    }
  } else {
    CheckError(parsed.status());
  }
}

}  // namespace
}  // namespace revkv::server::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  revkv::server::fuzz::Run(data, size);
  return 0;
}
