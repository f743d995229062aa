// Reading settings from a TOML file with toml++ (see config_file.h).
#include "server/config/config_file.h"

#include <toml++/toml.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
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

// Line `line` (1-based) of `text`, or "" past its end.
std::string_view LineOf(std::string_view text, int line) {
  for (int i = 1; i < line; ++i) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) return "";
    text.remove_prefix(newline + 1);
  }
  return text.substr(0, text.find('\n'));
}

// When the line TOML could not parse is `key = value` with a value that is not quoted, a number or a
// boolean (an address such as 127.0.0.1:2379, a size such as 64MiB), toml++ reports what it tried to
// read it as ("a time", "a date"), which helps nobody. This says what to write instead.
std::optional<std::string> UnquotedValueHint(std::string_view text, int line) {
  static const std::regex kAssignment(R"(^\s*([A-Za-z0-9_-]+)\s*=\s*([^"'\[{\s#][^#]*?)\s*(#.*)?\r?$)");
  const std::string content(LineOf(text, line));
  std::smatch m;
  if (!std::regex_match(content, m, kAssignment)) return std::nullopt;
  const std::string key = m[1].str();
  const std::string value = m[2].str();
  static const std::regex kNumberOrBool(R"(^([+-]?[0-9_]+(\.[0-9_]+)?([eE][+-]?[0-9]+)?|true|false)$)");
  if (std::regex_match(value, kNumberOrBool)) return std::nullopt;
  std::string why = "strings must be quoted in TOML";
  if (const Setting* setting = FindByTomlKey(key); setting != nullptr && setting->kind == ValueKind::kSize) {
    why = "a size with a unit is a string and must be quoted in TOML";
  } else if (setting != nullptr && setting->kind == ValueKind::kDuration) {
    why = "a duration is a string and must be quoted in TOML";
  }
  return fmt::format("the value of '{}' is not quoted ({}): write {} = \"{}\"", key, why, key, value);
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
    const int line = static_cast<int>(e.source().begin.line);
    if (std::optional<std::string> hint = UnquotedValueHint(text, line)) {
      return absl::InvalidArgumentError(fmt::format("config file {}:{}: {}", path, line, *hint));
    }
    return absl::InvalidArgumentError(
        fmt::format("config file {}:{}:{}: {}", path, line, e.source().begin.column, e.description()));
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
    RememberAsGiven(*setting, *value, config);
  }
  return absl::OkStatus();
}

}  // namespace revkv::server::config
