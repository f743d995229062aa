// Protobuf messages as revkv's JSON output.
#include "clients/cli/json_output.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace revkv::client {

nlohmann::ordered_json ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.always_print_enums_as_ints = false;
  std::string text;
  const auto status = google::protobuf::util::MessageToJsonString(message, &text, options);
  if (!status.ok()) {
    std::fprintf(stderr, "revkv: cannot write %s as JSON: %s\n", message.GetTypeName().c_str(),
                 std::string(status.message()).c_str());
    std::abort();
  }
  return nlohmann::ordered_json::parse(text);
}

void PrintJson(std::ostream& out, const nlohmann::ordered_json& value) {
  out << value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

void PrintProtoJson(std::ostream& out, const google::protobuf::Message& message) {
  PrintJson(out, ProtoToJson(message));
}

}  // namespace revkv::client
