// The MetaState object and the alarm list's encoding (meta_state.h).
#include "server/store/meta_state.h"

#include <algorithm>
#include <tuple>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace revkv::server::store {

using runtime::stm::Tx;

namespace {

bool Before(const etcdserverpb::AlarmMember& a, const etcdserverpb::AlarmMember& b) {
  return std::make_tuple(static_cast<int>(a.alarm()), a.memberid()) <
         std::make_tuple(static_cast<int>(b.alarm()), b.memberid());
}

}  // namespace

TypeDescriptor MetaState::Describe() {
  return TypeDescriptor::Fixed<MetaState>("store.Meta", &MetaState::alarms, &MetaState::auth);
}

std::string EncodeAlarms(const std::vector<etcdserverpb::AlarmMember>& alarms) {
  if (alarms.empty()) return std::string();
  etcdserverpb::AlarmResponse encoded;
  for (const etcdserverpb::AlarmMember& a : alarms) *encoded.add_alarms() = a;
  // Deterministic: the same list always has the same bytes (checkpoints, hashes).
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  encoded.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

int64_t AlarmMask(const std::vector<etcdserverpb::AlarmMember>& alarms) {
  int64_t mask = 0;
  for (const etcdserverpb::AlarmMember& a : alarms) mask |= AlarmBit(static_cast<int>(a.alarm()));
  return mask;
}

bool DecodeAlarms(std::string_view bytes, std::vector<etcdserverpb::AlarmMember>* alarms) {
  alarms->clear();
  if (bytes.empty()) return true;
  etcdserverpb::AlarmResponse decoded;
  if (!decoded.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || decoded.has_header()) {
    return false;
  }
  alarms->assign(decoded.alarms().begin(), decoded.alarms().end());
  for (size_t i = 1; i < alarms->size(); ++i) {
    if (!Before((*alarms)[i - 1], (*alarms)[i])) return false;
  }
  return true;
}

void NewMetaState(Tx& tx, const WritePtr<StoreRoot>& root) {
  WritePtr<MetaState> meta = tx.New<MetaState>();
  meta.Set(&MetaState::alarms, tx.NewBytes(std::string_view()));
  meta.Set(&MetaState::auth, tx.NewBytes(std::string_view()));
  meta->alarm_mask = 0;
  meta->auth_revision = 1;
  meta->auth_enabled = 0;
  root.Set(&StoreRoot::meta, Ref<MetaState>(meta));
}

void WriteAlarms(Tx& tx, const ReadPtr<MetaState>& meta,
                 const std::vector<etcdserverpb::AlarmMember>& alarms) {
  const std::string bytes = EncodeAlarms(alarms);
  Ref<Bytes> blob = tx.NewBytes(bytes);  // allocate before taking the writable copy
  WritePtr<MetaState> w = tx.Write(meta);
  w.Set(&MetaState::alarms, blob);
  w->alarm_mask = AlarmMask(alarms);
}

}  // namespace revkv::server::store

namespace revkv::server::store {

void WriteAuth(Tx& tx, const ReadPtr<MetaState>& meta, std::string_view encoded, int64_t revision,
               bool enabled) {
  Ref<Bytes> blob = tx.NewBytes(encoded);
  WritePtr<MetaState> w = tx.Write(meta);
  w.Set(&MetaState::auth, blob);
  w->auth_revision = revision;
  w->auth_enabled = enabled ? 1 : 0;
}

}  // namespace revkv::server::store
