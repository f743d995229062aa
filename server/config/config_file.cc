// Reading settings from a TOML file with toml++ (see config_file.h).
#include "server/config/config_file.h"

#include <toml++/toml.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "fmt/format.h"
#include "server/config/settings.h"

namespace revkv::server::config {
namespace {

std::string_view TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string_view ExpectedFor(ValueKind kind) {
  switch (kind) {
    case ValueKind::kText:
    case ValueKind::kEnum:
      return "a string";
    case ValueKind::kSize:
      return "an integer (bytes) or a string such as \"64MiB\"";
    case ValueKind::kDuration:
      return "a string such as \"10ms\" or \"5s\"";
    case ValueKind::kCount:
      return "an integer";
    case ValueKind::kBool:
      return "true or false";
  }
  return "a value";
}

// The TOML value as the text a Setting parses, or nullopt when its TOML type does not fit the kind.
std::optional<std::string> ValueText(const toml::node& node, ValueKind kind) {
  if (const auto* s = node.as_string();
      s != nullptr && kind != ValueKind::kCount && kind != ValueKind::kBool) {
    return s->get();
  }
  if (const auto* i = node.as_integer()) {
    if (kind == ValueKind::kCount || kind == ValueKind::kSize ||
        (kind == ValueKind::kDuration && i->get() == 0)) {
      return std::to_string(i->get());
    }
  }
  if (const auto* b = node.as_boolean(); b != nullptr && kind == ValueKind::kBool) {
    return std::string(b->get() ? "true" : "false");
  }
  return std::nullopt;
}

}  // namespace

absl::Status ApplyConfigFile(const std::string& path, ServerConfig& config) {
  // Read it ourselves first: toml++'s own message for a missing file does not say why.
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) {
    const std::string why =
        std::filesystem::is_directory(path, ec) ? "is a directory" : std::generic_category().message(errno);
    return absl::InvalidArgumentError(fmt::format("config file {}: cannot read: {}", path, why));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  toml::table table;
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(fmt::format("config file {}:{}:{}: {}", path, e.source().begin.line,
                                                  e.source().begin.column, e.description()));
  }

  for (auto&& [key, node] : table) {
    const std::string name(key.str());
    const int line = static_cast<int>(key.source().begin.line);
    const Setting* setting = FindByTomlKey(name);
    if (setting == nullptr) {
      std::string hint = "see docs/configuration.md for the keys";
      if (const Setting* flag_named = FindByFlag(name)) {
        hint = fmt::format("did you mean {}? keys use '_' where flags use '-'", flag_named->TomlKey());
      } else if (node.is_table()) {
        hint = "the file is flat: no [tables], every key at the top level";
      }
      return absl::InvalidArgumentError(
          fmt::format("config file {}:{}: unknown key '{}' ({})", path, line, name, hint));
    }
    const std::optional<std::string> value = ValueText(node, setting->kind);
    if (!value) {
      return absl::InvalidArgumentError(fmt::format("config file {}:{}: key '{}' must be {}, not {}", path,
                                                    line, name, ExpectedFor(setting->kind),
                                                    TomlTypeName(node)));
    }
    if (absl::Status status = setting->set(*value, config); !status.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("config file {}:{}: key '{}': {}", path, line, name, std::string(status.message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace revkv::server::config
