// The text of a transaction: compares and operations as `revkv txn` reads them from --if/--then/--else
// arguments or from a file. The grammar follows etcdctl's interactive `txn`:
//
//   compare    := target "(" key ")" op operand
//   target     := "value" | "val" | "v" | "mod" | "m" | "create" | "c" | "version" | "ver" | "lease"
//   op         := "=" | "==" | "!=" | "<" | ">"
//   operand    := string for value(...); a decimal integer for the others
//   operation  := "put" [--prev-kv] key value
//               | "get" [--prefix | --from-key] [--keys-only] [--count-only] [--limit N] [--rev N]
//                       key [range_end]
//               | "del" [--prefix | --from-key] [--prev-kv] key [range_end]
//
// A key, value or string is a bare word (no blanks, and in a compare's key no ')'), or quoted: "..."
// with the escapes \" \\ \n \r \t \0 \xHH, or '...' taken literally. So `mod(k) > 3`,
// `value("k") = "v 1"` and `put k 'v 1'` are all valid. "range" is accepted for "get" and "delete"
// for "del"; flags may also come after the key, and --limit=N works as well as --limit N. A quoted word
// is never a flag.
//
// The file format holds three sections, in order, separated by one blank line each: compares, the
// operations to run when every compare holds, the operations to run otherwise. Lines whose first
// non-blank character is '#' are comments. An empty section is written as an empty line, so a file
// with no compares starts with a blank line.
#ifndef REVKV_CLIENTS_CLI_TXN_GRAMMAR_H_
#define REVKV_CLIENTS_CLI_TXN_GRAMMAR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "etcdserverpb/rpc.pb.h"

namespace revkv::client {

// Parses one compare. INVALID_ARGUMENT saying what is wrong and where.
absl::StatusOr<etcdserverpb::Compare> ParseCompare(absl::string_view text);

// Parses one operation. INVALID_ARGUMENT saying what is wrong.
absl::StatusOr<etcdserverpb::RequestOp> ParseRequestOp(absl::string_view text);

// A transaction from separate lists of compares and of success and failure operations. INVALID_ARGUMENT
// naming the list and the entry ("--if 2: ...").
absl::StatusOr<etcdserverpb::TxnRequest> ParseTxnArguments(const std::vector<std::string>& compares,
                                                           const std::vector<std::string>& success,
                                                           const std::vector<std::string>& failure);

// A transaction from the file format above. INVALID_ARGUMENT naming the line ("line 3: ...").
absl::StatusOr<etcdserverpb::TxnRequest> ParseTxnText(absl::string_view text);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_TXN_GRAMMAR_H_
