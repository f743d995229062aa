// revkv txn: reads the transaction, sends it, writes "SUCCESS"/"FAILURE" and the responses of the
// branch that ran (or the TxnResponse as JSON). A failed compare is not an error: the exit status is 0
// either way, as with etcdctl.
#include "clients/cli/txn_command.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "clients/cli/connection.h"
#include "clients/cli/exit_status.h"
#include "clients/cli/json_output.h"
#include "clients/cli/kv_printer.h"
#include "clients/cli/txn_grammar.h"

namespace revkv::client {
namespace {

struct TxnFlags {
  std::vector<std::string> compares;  // --if
  std::vector<std::string> success;   // --then
  std::vector<std::string> failure;   // --else
  std::string file;                   // --file; "-" is standard input
};

absl::StatusOr<std::string> ReadTxnFile(const std::string& path) {
  if (path == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    if (std::cin.bad()) return absl::DataLossError("txn: cannot read standard input");
    return text;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return UsageError(absl::StrCat("txn: cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<etcdserverpb::TxnRequest> ReadTxn(const TxnFlags& flags) {
  const bool from_arguments = !flags.compares.empty() || !flags.success.empty() || !flags.failure.empty();
  if (from_arguments && !flags.file.empty()) {
    return UsageError("txn: give either --file or --if/--then/--else, not both");
  }
  if (!from_arguments && flags.file.empty()) {
    return UsageError("txn: give --if/--then/--else, or --file FILE (- for standard input)");
  }
  absl::StatusOr<etcdserverpb::TxnRequest> txn;
  if (from_arguments) {
    txn = ParseTxnArguments(flags.compares, flags.success, flags.failure);
  } else {
    absl::StatusOr<std::string> text = ReadTxnFile(flags.file);
    if (!text.ok()) return text.status();
    txn = ParseTxnText(*text);
  }
  if (!txn.ok()) return UsageError(absl::StrCat("txn: ", txn.status().message()));
  return txn;
}

absl::Status RunTxn(const GlobalOptions& global, const TxnFlags& flags) {
  absl::StatusOr<etcdserverpb::TxnRequest> request = ReadTxn(flags);
  if (!request.ok()) return request.status();
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  etcdserverpb::TxnResponse response;
  absl::Status status =
      (*connection)->Call((*connection)->kv(), &etcdserverpb::KV::Stub::Txn, *request, &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    PrintTxn(std::cout, response, &*request);
  }
  return absl::OkStatus();
}

}  // namespace

void AddTxnCommand(CLI::App& app, const CommandSetup& setup) {
  const GlobalOptions& global = *setup.global;
  auto flags = std::make_shared<TxnFlags>();
  CLI::App* txn =
      app.add_subcommand("txn", "run compares and then one of two lists of operations, atomically");
  txn->add_option("--if", flags->compares,
                  "a compare, e.g. 'mod(k) = 5' or 'value(\"k\") != \"v\"' (repeatable)")
      ->type_name("COMPARE");
  txn->add_option("--then", flags->success,
                  "an operation when every compare holds, e.g. 'put k v' (repeatable)")
      ->type_name("OP");
  txn->add_option("--else", flags->failure, "an operation when a compare fails, e.g. 'get k' (repeatable)")
      ->type_name("OP");
  txn->add_option("--file", flags->file,
                  "read the transaction from FILE (- for standard input); see docs/cli.md")
      ->type_name("FILE");
  txn->footer(
      "Compares: value|mod|create|version|lease(KEY) =|!=|<|> OPERAND. Operations: put KEY VALUE, "
      "get [--prefix] KEY [END], del [--prefix] KEY [END]. A file holds compares, a blank line, success "
      "operations, a blank line, failure operations.");
  setup.dispatch->Bind(txn, [&global, flags] { return RunTxn(global, *flags); });
}

}  // namespace revkv::client
