// Protobuf messages in revkv's JSON style (proto_json.h), by reflection.
#include "proto/json/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace revkv {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Json = nlohmann::ordered_json;

[[noreturn]] void Refuse(const google::protobuf::Descriptor* type, const char* why) {
  std::fprintf(stderr, "revkv: cannot write %s as JSON: %s\n", type->full_name().c_str(), why);
  std::abort();
}

Json FromDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

// Element `index` of repeated field `f`, or the singular field when index < 0.
Json FieldValue(const Message& m, const Reflection* r, const FieldDescriptor* f, int index) {
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return FromDouble(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT: {
      // Through float's shortest decimal form, so 0.1f reads 0.1 and not 0.10000000149011612.
      const float v = rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
      if (!std::isfinite(v)) return FromDouble(v);
      char text[32];
      std::snprintf(text, sizeof text, "%.9g", v);
      return std::strtod(text, nullptr);
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const google::protobuf::EnumValueDescriptor* value = f->enum_type()->FindValueByNumber(number);
      if (value == nullptr) return number;  // an open enum's unknown value: its number, as protobuf's mapping
      return value->name();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s =
          rep ? r->GetRepeatedStringReference(m, f, index, &scratch) : r->GetStringReference(m, f, &scratch);
      if (f->type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(s);
      return s;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ProtoToJson(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
  }
  Refuse(m.GetDescriptor(), "a field of an unknown type");
}

}  // namespace

nlohmann::ordered_json ProtoToJson(const google::protobuf::Message& message) {
  const google::protobuf::Descriptor* type = message.GetDescriptor();
  if (type->well_known_type() != google::protobuf::Descriptor::WELLKNOWNTYPE_UNSPECIFIED) {
    Refuse(type, "well-known types are not written in revkv's JSON style");
  }
  const Reflection* r = message.GetReflection();
  Json out = Json::object();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    if (f->is_map()) Refuse(type, "map fields are not written in revkv's JSON style");
    if (f->is_repeated()) {
      Json list = Json::array();
      const int n = r->FieldSize(message, f);
      for (int j = 0; j < n; ++j) list.push_back(FieldValue(message, r, f, j));
      out[f->name()] = std::move(list);
      continue;
    }
    // Fields with presence (messages, oneof members, proto3 `optional`): only when set.
    if (f->has_presence() && !r->HasField(message, f)) continue;
    out[f->name()] = FieldValue(message, r, f, -1);
  }
  return out;
}

}  // namespace revkv
