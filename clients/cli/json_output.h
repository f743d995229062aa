// revkv's --json output.
//
// A response message is written in protobuf's canonical JSON mapping (what
// google::protobuf::util::MessageToJsonString produces), with three settings fixed for every command:
// field names as the .proto files spell them (`create_revision`, `mod_revision`, as etcdctl -w json
// writes them), every field present even when it holds its zero value (so a script can rely on
// `count` or `more` being there), and enums by name ("MAJOR"). As the mapping requires, bytes fields
// (keys and values) are base64 and 64-bit integers are JSON strings ("revision": "42").
//
// Fields keep the order of the .proto file. Output that is not one response (status, gc watch) is an object
// composed of such messages and of plain JSON numbers; docs/cli.md describes each.
#ifndef REVKV_CLIENTS_CLI_JSON_OUTPUT_H_
#define REVKV_CLIENTS_CLI_JSON_OUTPUT_H_

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <ostream>

namespace revkv::client {

// `message` as a JSON value, in the mapping above. Never fails for the messages revkv uses (a broken
// message aborts).
nlohmann::ordered_json ProtoToJson(const google::protobuf::Message& message);

// Writes `value` to `out`, indented by two spaces, with a newline.
void PrintJson(std::ostream& out, const nlohmann::ordered_json& value);

// Writes `message` as PrintJson(out, ProtoToJson(message)) does.
void PrintProtoJson(std::ostream& out, const google::protobuf::Message& message);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_JSON_OUTPUT_H_
