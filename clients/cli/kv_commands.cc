// get, put, del, range and compact: each builds one etcd request from its arguments, sends it, and writes
// the response as text (kv_printer.h) or JSON (json_output.h).
#include "clients/cli/kv_commands.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <iterator>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/cli/connection.h"
#include "clients/cli/exit_status.h"
#include "clients/cli/json_output.h"
#include "clients/cli/key_range.h"
#include "clients/cli/kv_printer.h"

namespace revkv::client {
namespace {

struct PutFlags {
  std::string key;
  std::string value;  // "-": read it from standard input
  bool prev_kv = false;
};

struct DelFlags {
  KeySelection keys;
  bool prev_kv = false;
};

struct RangeFlags {
  KeySelection keys;
  int64_t limit = 0;
  int64_t revision = 0;
  bool keys_only = false;
  bool count_only = false;
  std::string sort_by;  // "" or a SortTarget name, any case
  std::string order;    // "" or a SortOrder name, any case
};

struct CompactFlags {
  int64_t revision = 0;
  bool physical = false;
};

// Adds the positional KEY [RANGE_END] and --prefix/--from-key of range and del.
void AddKeySelection(CLI::App* command, KeySelection* keys) {
  command->add_option("key", keys->key, "the key, or the start of the range")->required();
  command->add_option("range_end", keys->range_end, "end of the range (exclusive)");
  command->add_flag("--prefix", keys->prefix, "every key starting with KEY (every key when KEY is \"\")");
  command->add_flag("--from-key", keys->from_key, "every key >= KEY");
}

// The positional KEY [RANGE_END] and every flag of range (and of get, which takes the same).
void AddRangeFlags(CLI::App* command, RangeFlags* range) {
  AddKeySelection(command, &range->keys);
  command->add_option("--limit", range->limit, "at most this many keys (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--rev", range->revision, "read as of this revision (0: the newest)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--keys-only", range->keys_only, "print the keys only");
  command->add_flag("--count-only", range->count_only, "print the number of keys only");
  command->add_option("--sort-by", range->sort_by, "key, version, create, mod or value");
  command->add_option("--order", range->order, "ascend or descend (with --sort-by: ascend)");
}

// Connects and sends one request to the KV service.
template <typename Request, typename Response>
absl::Status SendKv(const GlobalOptions& global,
                    grpc::Status (etcdserverpb::KV::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                   Response*),
                    const Request& request, Response* response) {
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  return (*connection)->Call((*connection)->kv(), method, request, response);
}

absl::StatusOr<KeyRange> Resolve(const KeySelection& keys) {
  absl::StatusOr<KeyRange> range = ResolveKeyRange(keys);
  if (!range.ok()) return UsageError(range.status().message());
  return range;
}

absl::Status RunPut(const GlobalOptions& global, const PutFlags& flags) {
  etcdserverpb::PutRequest request;
  request.set_key(flags.key);
  request.set_prev_kv(flags.prev_kv);
  if (flags.value == "-") {
    std::string value{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    if (std::cin.bad()) return absl::DataLossError("cannot read the value from standard input");
    request.set_value(std::move(value));
  } else {
    request.set_value(flags.value);
  }
  etcdserverpb::PutResponse response;
  absl::Status status = SendKv(global, &etcdserverpb::KV::Stub::Put, request, &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    PrintPut(std::cout, response);
  }
  return absl::OkStatus();
}

absl::Status RunDel(const GlobalOptions& global, const DelFlags& flags) {
  absl::StatusOr<KeyRange> range = Resolve(flags.keys);
  if (!range.ok()) return range.status();
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(range->key);
  request.set_range_end(range->range_end);
  request.set_prev_kv(flags.prev_kv);
  etcdserverpb::DeleteRangeResponse response;
  absl::Status status = SendKv(global, &etcdserverpb::KV::Stub::DeleteRange, request, &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    PrintDelete(std::cout, response);
  }
  return absl::OkStatus();
}

absl::StatusOr<etcdserverpb::RangeRequest> BuildRangeRequest(const RangeFlags& flags) {
  absl::StatusOr<KeyRange> range = Resolve(flags.keys);
  if (!range.ok()) return range.status();
  etcdserverpb::RangeRequest request;
  request.set_key(range->key);
  request.set_range_end(range->range_end);
  request.set_limit(flags.limit);
  request.set_revision(flags.revision);
  request.set_keys_only(flags.keys_only);
  request.set_count_only(flags.count_only);
  if (!flags.sort_by.empty()) {
    etcdserverpb::RangeRequest::SortTarget target;
    std::string name = absl::AsciiStrToUpper(flags.sort_by);
    if (name == "MODIFY") name = "MOD";  // etcdctl's spelling
    if (!etcdserverpb::RangeRequest::SortTarget_Parse(name, &target)) {
      return UsageError(absl::StrCat("--sort-by: unknown target \"", flags.sort_by,
                                     "\" (use key, version, create, mod or value)"));
    }
    request.set_sort_target(target);
    request.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  }
  if (!flags.order.empty()) {
    etcdserverpb::RangeRequest::SortOrder order;
    if (!etcdserverpb::RangeRequest::SortOrder_Parse(absl::AsciiStrToUpper(flags.order), &order)) {
      return UsageError(absl::StrCat("--order: unknown order \"", flags.order, "\" (use ascend or descend)"));
    }
    request.set_sort_order(order);
  }
  return request;
}

// -w table, json or simple (range's format).
void PrintRangeAs(const GlobalOptions& global, const etcdserverpb::RangeResponse& response,
                  const RangeView& view) {
  if (global.output == OutputFormat::kJson) {
    PrintProtoJson(std::cout, response);
  } else if (global.output == OutputFormat::kTable) {
    PrintRangeTable(std::cout, response, view);
  } else {
    PrintRange(std::cout, response, view);
  }
}

absl::Status RunRange(const GlobalOptions& global, const RangeFlags& flags) {
  absl::StatusOr<etcdserverpb::RangeRequest> request = BuildRangeRequest(flags);
  if (!request.ok()) return request.status();
  etcdserverpb::RangeResponse response;
  absl::Status status = SendKv(global, &etcdserverpb::KV::Stub::Range, *request, &response);
  if (!status.ok()) return status;
  PrintRangeAs(global, response, RangeView{.keys_only = flags.keys_only, .count_only = flags.count_only});
  return absl::OkStatus();
}

// etcdctl's get: one key, or a range with range's flags. Of one key, the simple format prints the value
// alone, and an absent key exits with status 3 in every format; a range prints as `range` does.
absl::Status RunGet(const GlobalOptions& global, const RangeFlags& flags) {
  const bool one_key = flags.keys.range_end.empty() && !flags.keys.prefix && !flags.keys.from_key;
  absl::StatusOr<etcdserverpb::RangeRequest> request = BuildRangeRequest(flags);
  if (!request.ok()) return request.status();
  etcdserverpb::RangeResponse response;
  absl::Status status = SendKv(global, &etcdserverpb::KV::Stub::Range, *request, &response);
  if (!status.ok()) return status;
  const RangeView view{.keys_only = flags.keys_only, .count_only = flags.count_only};
  if (one_key && global.output == OutputFormat::kSimple && !flags.keys_only && !flags.count_only) {
    if (response.kvs_size() > 0) std::cout << response.kvs(0).value() << '\n';
  } else {
    PrintRangeAs(global, response, view);
  }
  if (one_key && !flags.count_only && response.kvs_size() == 0) {
    return NotFoundExit(absl::StrCat("key \"", flags.keys.key, "\" not found"));
  }
  return absl::OkStatus();
}

absl::Status RunCompact(const GlobalOptions& global, const CompactFlags& flags) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(flags.revision);
  request.set_physical(flags.physical);
  etcdserverpb::CompactionResponse response;
  absl::Status status = SendKv(global, &etcdserverpb::KV::Stub::Compact, request, &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    std::cout << "compacted revision " << flags.revision << '\n';
  }
  return absl::OkStatus();
}

}  // namespace

void AddKvCommands(CLI::App& app, const CommandSetup& setup) {
  const GlobalOptions& global = *setup.global;

  auto get = std::make_shared<RangeFlags>();
  CLI::App* get_command = app.add_subcommand(
      "get", "print the value of one key (exit status 3 if it is absent), or a range of keys as range does");
  AddRangeFlags(get_command, get.get());
  setup.dispatch->Bind(get_command, [&global, get] { return RunGet(global, *get); });

  auto put = std::make_shared<PutFlags>();
  CLI::App* put_command = app.add_subcommand("put", "set a key to a value");
  put_command->add_option("key", put->key, "the key")->required();
  put_command->add_option("value", put->value, "the value; - reads it from standard input, as it is")
      ->required();
  put_command->add_flag("--prev-kv", put->prev_kv, "also print the previous key-value pair");
  setup.dispatch->Bind(put_command, [&global, put] { return RunPut(global, *put); });

  auto del = std::make_shared<DelFlags>();
  CLI::App* del_command = app.add_subcommand("del", "delete a key or a range of keys; prints how many");
  AddKeySelection(del_command, &del->keys);
  del_command->add_flag("--prev-kv", del->prev_kv, "also print the deleted key-value pairs");
  setup.dispatch->Bind(del_command, [&global, del] { return RunDel(global, *del); });

  auto range = std::make_shared<RangeFlags>();
  CLI::App* range_command = app.add_subcommand("range", "print a key or a range of keys with their values");
  AddRangeFlags(range_command, range.get());
  setup.dispatch->Bind(range_command, [&global, range] { return RunRange(global, *range); });

  auto compact = std::make_shared<CompactFlags>();
  CLI::App* compact_command = app.add_subcommand("compact", "discard the history before a revision");
  compact_command->add_option("revision", compact->revision, "the revision")
      ->required()
      ->check(CLI::PositiveNumber);
  compact_command->add_flag("--physical", compact->physical, "answer once the history is gone");
  setup.dispatch->Bind(compact_command, [&global, compact] { return RunCompact(global, *compact); });
}

}  // namespace revkv::client
