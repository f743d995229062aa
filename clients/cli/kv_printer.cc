// etcdctl-style text output of KV responses.
#include "clients/cli/kv_printer.h"

#include "absl/strings/str_cat.h"
#include "clients/cli/table.h"

namespace revkv::client {

void PrintKeyValue(std::ostream& out, const mvccpb::KeyValue& kv, bool keys_only) {
  out << kv.key() << '\n';
  if (!keys_only) out << kv.value() << '\n';
}

void PrintRange(std::ostream& out, const etcdserverpb::RangeResponse& response, const RangeView& view) {
  if (view.count_only) {
    out << response.count() << '\n';
    return;
  }
  for (const mvccpb::KeyValue& kv : response.kvs()) PrintKeyValue(out, kv, view.keys_only);
}

void PrintRangeTable(std::ostream& out, const etcdserverpb::RangeResponse& response, const RangeView& view) {
  if (view.count_only) {
    Table table({"COUNT"});
    table.AlignRight(0);
    table.AddRow({absl::StrCat(response.count())});
    out << table.RenderBoxed();
    return;
  }
  if (view.keys_only) {
    Table table({"KEY"});
    for (const mvccpb::KeyValue& kv : response.kvs()) table.AddRow({kv.key()});
    out << table.RenderBoxed();
    return;
  }
  Table table({"KEY", "VALUE", "CREATE_REVISION", "MOD_REVISION", "VERSION", "LEASE"});
  for (size_t column : {2, 3, 4, 5}) table.AlignRight(column);
  for (const mvccpb::KeyValue& kv : response.kvs()) {
    table.AddRow({kv.key(), kv.value(), absl::StrCat(kv.create_revision()), absl::StrCat(kv.mod_revision()),
                  absl::StrCat(kv.version()),
                  kv.lease() == 0 ? "" : absl::StrCat(absl::Hex(static_cast<uint64_t>(kv.lease())))});
  }
  out << table.RenderBoxed();
}

void PrintPut(std::ostream& out, const etcdserverpb::PutResponse& response) {
  out << "OK\n";
  if (response.has_prev_kv()) PrintKeyValue(out, response.prev_kv());
}

void PrintDelete(std::ostream& out, const etcdserverpb::DeleteRangeResponse& response) {
  out << response.deleted() << '\n';
  for (const mvccpb::KeyValue& kv : response.prev_kvs()) PrintKeyValue(out, kv);
}

void PrintTxn(std::ostream& out, const etcdserverpb::TxnResponse& response,
              const etcdserverpb::TxnRequest* request) {
  out << (response.succeeded() ? "SUCCESS" : "FAILURE") << '\n';
  const auto* branch =
      request == nullptr ? nullptr : (response.succeeded() ? &request->success() : &request->failure());
  for (int i = 0; i < response.responses_size(); ++i) {
    const etcdserverpb::ResponseOp& op = response.responses(i);
    const etcdserverpb::RequestOp* sent = branch != nullptr && i < branch->size() ? &branch->Get(i) : nullptr;
    out << '\n';
    switch (op.response_case()) {
      case etcdserverpb::ResponseOp::kResponseRange: {
        RangeView view;
        if (sent != nullptr && sent->has_request_range()) {
          view.keys_only = sent->request_range().keys_only();
          view.count_only = sent->request_range().count_only();
        }
        PrintRange(out, op.response_range(), view);
        break;
      }
      case etcdserverpb::ResponseOp::kResponsePut:
        PrintPut(out, op.response_put());
        break;
      case etcdserverpb::ResponseOp::kResponseDeleteRange:
        PrintDelete(out, op.response_delete_range());
        break;
      case etcdserverpb::ResponseOp::kResponseTxn:
        PrintTxn(out, op.response_txn(),
                 sent != nullptr && sent->has_request_txn() ? &sent->request_txn() : nullptr);
        break;
      case etcdserverpb::ResponseOp::RESPONSE_NOT_SET:
        break;
    }
  }
}

}  // namespace revkv::client
