// revkv's one JSON style for protobuf messages: what `revkv --json`, `revkv -w json` and the ops
// endpoint's /debug/gc write (and the shape `revkv gc watch --json` follows).
//
// A message becomes a JSON object of its fields in .proto order, named as the .proto spells them
// (snake_case: `create_revision`, as etcdctl -w json writes them), with:
//  - every integer as a JSON number, 64-bit ones included (protobuf's canonical mapping writes those as
//    strings; etcdctl -w json, Prometheus tooling and jq users expect numbers). A uint64 above 2^53 stays
//    exact in the text; a reader that parses numbers as doubles rounds it, as it would etcdctl's.
//  - bytes (keys, values) in base64, as both protobuf's mapping and etcdctl write them;
//  - enums by name ("MAJOR"); booleans as true/false; doubles as numbers ("NaN", "Infinity" and
//    "-Infinity" as strings, as protobuf's mapping writes them);
//  - every scalar and repeated field present even when zero or empty (so a script can rely on `count`
//    or `more` being there); a message field or a oneof member only when it is set.
// Messages with map fields or well-known types are not used by revkv and are refused (aborts).
#ifndef REVKV_PROTO_JSON_PROTO_JSON_H_
#define REVKV_PROTO_JSON_PROTO_JSON_H_

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

namespace revkv {

// `message` in the style above. Thread-safe (reads `message` only).
nlohmann::ordered_json ProtoToJson(const google::protobuf::Message& message);

}  // namespace revkv

#endif  // REVKV_PROTO_JSON_PROTO_JSON_H_
