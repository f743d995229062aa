// revkv's --json output.
//
// A response message is written in revkv's one JSON style (proto/json/proto_json.h, also /debug/gc's):
// field names as the .proto files spell them (`create_revision`, `mod_revision`, as etcdctl -w json
// writes them), every integer a JSON number ("revision": 42, as etcdctl writes it), bytes fields (keys
// and values) in base64, enums by name ("MAJOR"), and every field present even when it holds its zero
// value (so a script can rely on `count` or `more` being there).
//
// Fields keep the order of the .proto file. Output that is not one response (status, gc watch) is an object
// composed of such messages and of plain JSON numbers; docs/cli.md describes each.
#ifndef REVKV_CLIENTS_CLI_JSON_OUTPUT_H_
#define REVKV_CLIENTS_CLI_JSON_OUTPUT_H_

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "proto/json/proto_json.h"

namespace revkv::client {

// `message` as a JSON value, in the style above.
using ::revkv::ProtoToJson;

// Writes `value` to `out`, indented by two spaces, with a newline.
void PrintJson(std::ostream& out, const nlohmann::ordered_json& value);

// Writes `message` as PrintJson(out, ProtoToJson(message)) does.
void PrintProtoJson(std::ostream& out, const google::protobuf::Message& message);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_JSON_OUTPUT_H_
