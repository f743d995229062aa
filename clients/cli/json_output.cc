// Protobuf messages as revkv's JSON output.
#include "clients/cli/json_output.h"

namespace revkv::client {

void PrintJson(std::ostream& out, const nlohmann::ordered_json& value) {
  out << value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

void PrintProtoJson(std::ostream& out, const google::protobuf::Message& message) {
  PrintJson(out, ProtoToJson(message));
}

}  // namespace revkv::client
