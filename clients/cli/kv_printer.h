// The text output of etcd's KV responses, in etcdctl's "simple" format: a key-value pair is its key on
// one line and its value on the next, written as stored (no quoting or escaping); a put is "OK"; a
// delete is the number of keys deleted; a txn is "SUCCESS" or "FAILURE" followed by each response of
// the branch that ran, each after a blank line.
#ifndef REVKV_CLIENTS_CLI_KV_PRINTER_H_
#define REVKV_CLIENTS_CLI_KV_PRINTER_H_

#include <ostream>

#include "etcdserverpb/rpc.pb.h"

namespace revkv::client {

// How a range's pairs are written.
struct RangeView {
  bool keys_only = false;   // keys, one per line
  bool count_only = false;  // the count alone
};

// Writes one pair: the key line and, unless `keys_only`, the value line.
void PrintKeyValue(std::ostream& out, const mvccpb::KeyValue& kv, bool keys_only = false);

void PrintRange(std::ostream& out, const etcdserverpb::RangeResponse& response, const RangeView& view = {});
// -w table: the pairs in etcdctl's boxes, one row each: KEY, VALUE, CREATE_REVISION, MOD_REVISION,
// VERSION, LEASE (hexadecimal, as etcdctl writes lease IDs; empty without one). keys_only: KEY alone;
// count_only: COUNT alone.
void PrintRangeTable(std::ostream& out, const etcdserverpb::RangeResponse& response,
                     const RangeView& view = {});
// "OK", then the previous pair when the response carries one.
void PrintPut(std::ostream& out, const etcdserverpb::PutResponse& response);
// The number of keys deleted, then the previous pairs when the response carries them.
void PrintDelete(std::ostream& out, const etcdserverpb::DeleteRangeResponse& response);
// `request`, when given, is the txn that was sent: its range operations' keys_only and count_only
// choose how their responses are written.
void PrintTxn(std::ostream& out, const etcdserverpb::TxnResponse& response,
              const etcdserverpb::TxnRequest* request = nullptr);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_KV_PRINTER_H_
