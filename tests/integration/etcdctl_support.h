// Running Debian's etcdctl 3.4 against a test server, and reading its `-w json` output.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "tests/integration/server_process.h"

namespace revkv::integration {

inline constexpr char kEtcdctl[] = "/usr/bin/etcdctl";

// Runs `etcdctl --endpoints=<server> <args>` (API v3) with `stdin_text` as input. Blocks (at most
// `timeout`).
inline CommandResult Etcdctl(const ServerProcess& server, const std::vector<std::string>& args,
                             const std::string& stdin_text = "",
                             std::chrono::seconds timeout = std::chrono::seconds(60)) {
  std::vector<std::string> argv = {kEtcdctl, "--endpoints=" + server.address(), "--command-timeout=15s"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, stdin_text, {{"ETCDCTL_API", "3"}}, timeout);
}

// The JSON document in `out`: from its first '{' or '[' (interactive commands print prompts before it).
// A discarded value (is_discarded()) if there is none or it does not parse.
inline nlohmann::json ParseJson(const std::string& out) {
  const size_t start = out.find_first_of("{[");
  if (start == std::string::npos) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(out.substr(start), nullptr, /*allow_exceptions=*/false);
}

// etcdctl prints keys and values (bytes) base64-encoded in JSON.
inline std::string Base64(const nlohmann::json& value) {
  std::string decoded;
  if (!value.is_string() || !absl::Base64Unescape(value.get<std::string>(), &decoded)) return "<not base64>";
  return decoded;
}

inline std::vector<std::string> JsonKeys(const nlohmann::json& response) {
  std::vector<std::string> keys;
  for (const auto& kv : response.value("kvs", nlohmann::json::array())) keys.push_back(Base64(kv["key"]));
  return keys;
}

}  // namespace revkv::integration
