// The ops endpoint's pages (ops_routes.h).
#include "server/process/ops_routes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "etcdserverpb/rpc.pb.h"
#include "proto/json/proto_json.h"
#include "server/config/version.h"
#include "server/process/logging.h"
#include "server/process/ui_page.h"
#include "server/rpc/admin_service.h"
#include "server/store/errors.h"

namespace revkv::server {

OpsRoutes::OpsRoutes(MetricsRegistry* metrics, const RecoveryProgress* progress)
    : metrics_(metrics), progress_(progress) {
  // While recovering, /metrics says so (a scrape that is up but shows no store is not a failure).
  collector_ = metrics_->AddCollector([this](MetricWriter& w) {
    const RecoveryProgress::Snapshot s = progress_->Read();
    const bool recovering = state() == nullptr;
    w.WriteGauge("revkv_recovering",
                 "1 while the store is being recovered at start (the server does not serve "
                 "requests yet), then 0.",
                 recovering ? 1.0 : 0.0);
    w.WriteGauge(
        "revkv_build_info",
        "Always 1; the labels name the version (as etcd clients see it), revkv's own version and the "
        "etcd API version served.",
        1.0,
        {{"version", kServerVersion},
         {"revkv_version", kRevkvVersion},
         {"etcd_api_version", kEtcdApiVersion}});
    w.WriteGauge("revkv_recovery_progress_ratio",
                 "How far the current phase of recovery has come (0 to 1; 1 once recovered).",
                 recovering ? s.PhaseFraction() : 1.0);
  });
}

OpsRoutes::~OpsRoutes() { metrics_->RemoveCollector(collector_); }

void OpsRoutes::AddTo(HttpServer& server) {
  server.Handle("/metrics", [this](const HttpRequest&) {
    return HttpResponse::Make(200, MetricsRegistry::kContentType, metrics_->Render());
  });
  server.Handle("/healthz", [this](const HttpRequest&) { return Healthz(); });
  server.Handle("/version", [this](const HttpRequest&) { return Version(); });
  server.Handle("/health", [this](const HttpRequest& request) { return Health(request); });
  server.Handle("/livez", [](const HttpRequest&) { return HttpResponse::Text(200, "ok"); });
  server.Handle("/readyz", [this](const HttpRequest&) { return Readyz(); });
  server.Handle("/debug/gc", [this](const HttpRequest& request) { return DebugGc(request); });
  // The page is static; what it shows comes from /debug/gc and /metrics, read by the browser.
  server.Handle("/ui", [](const HttpRequest&) {
    return HttpResponse::Make(200, "text/html; charset=utf-8", std::string(kUiPage, sizeof kUiPage - 1));
  });
}

HttpResponse OpsRoutes::Healthz() const {
  ServerState* state = this->state();
  if (state == nullptr)
    return HttpResponse::Text(503, absl::StrCat("recovering: ", progress_->Read().Describe(), "\n"));
  const absl::Status w = state->engine->write_status();
  return w.ok() ? HttpResponse::Text(200, "ok\n")
                : HttpResponse::Text(503, absl::StrCat("read-only after a disk error: ", w.message(), "\n"));
}

namespace {

// The alarm types active on a recovered server, in etcd's names ("NOSPACE", "CORRUPT"), ordered by type:
// the stored alarms and the disk's (a failed log: NOSPACE for a full disk, CORRUPT for another error), as
// etcd's alarm list shows them.
std::vector<std::string> ActiveAlarms(ServerState* state) {
  int64_t mask = state->engine->store().AlarmMask();
  if (const absl::Status w = state->engine->write_status(); !w.ok()) {
    mask |= int64_t{1} << (errors::IsNoSpace(w) ? etcdserverpb::NOSPACE : etcdserverpb::CORRUPT);
  }
  std::vector<std::string> names;
  for (int type = 0; type < 63; ++type) {
    if ((mask & (int64_t{1} << type)) == 0) continue;
    names.push_back(etcdserverpb::AlarmType_IsValid(type)
                        ? etcdserverpb::AlarmType_Name(static_cast<etcdserverpb::AlarmType>(type))
                        : absl::StrCat(type));
  }
  return names;
}

// The values of every "exclude" parameter of the query (etcd's /health?exclude=NOSPACE&exclude=...).
// Alarm names need no decoding.
std::vector<std::string> Excluded(const HttpRequest& request) {
  std::vector<std::string> out;
  const size_t question = request.target.find('?');
  if (question == std::string::npos) return out;
  std::string_view query(request.target);
  query = query.substr(question + 1, query.find('#', question) - question - 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("exclude=")) out.emplace_back(pair.substr(8));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return out;
}

}  // namespace

// etcd 3.4's body ({"health":"true"}, or "false" with 503), with etcd 3.5's "reason" when unhealthy. As
// etcd's, unhealthy while an alarm is active, unless the query excludes its type (?exclude=NOSPACE).
HttpResponse OpsRoutes::Health(const HttpRequest& request) const {
  ServerState* state = this->state();
  std::string reason;
  if (state == nullptr) {
    reason = "recovering: " + progress_->Read().Describe();
  } else {
    const std::vector<std::string> excluded = Excluded(request);
    for (const std::string& alarm : ActiveAlarms(state)) {
      if (std::find(excluded.begin(), excluded.end(), alarm) != excluded.end()) continue;
      reason = "alarm activated: " + alarm;
      if (const absl::Status w = state->engine->write_status(); !w.ok()) {
        absl::StrAppend(&reason, " (read-only after a disk error: ", w.message(), ")");
      }
      break;
    }
  }
  if (reason.empty()) return HttpResponse::Json(200, R"({"health":"true"})");
  std::string body = R"({"health":"false","reason":")";
  AppendJsonEscaped(reason, body);
  return HttpResponse::Json(503, body + "\"}");
}

// etcd 3.5's readiness: ready once the store serves reads. The CORRUPT alarm fails it (stored, or the
// disk's for a disk error other than a full disk: writes stop, reads go on); NOSPACE does not.
HttpResponse OpsRoutes::Readyz() const {
  ServerState* state = this->state();
  if (state == nullptr) {
    return HttpResponse::Text(
        503, "[-]recovered failed: " + progress_->Read().Describe() + "\nreadyz check failed\n");
  }
  const std::vector<std::string> alarms = ActiveAlarms(state);
  if (std::find(alarms.begin(), alarms.end(), "CORRUPT") != alarms.end()) {
    std::string why = "alarm activated: CORRUPT";
    if (const absl::Status w = state->engine->write_status(); !w.ok() && !errors::IsNoSpace(w)) {
      absl::StrAppend(&why, " (", w.message(), ")");
    }
    return HttpResponse::Text(503, "[-]data_corruption failed: " + why + "\nreadyz check failed\n");
  }
  return HttpResponse::Text(200, "ok");
}

HttpResponse OpsRoutes::Version() const {
  return HttpResponse::Json(200, absl::StrCat(R"({"etcdserver":")", std::string(kServerVersion),
                                              R"(","etcdcluster":")", std::string(kEtcdApiVersion), R"("})"));
}

HttpResponse OpsRoutes::DebugGc(const HttpRequest& request) const {
  ServerState* state = this->state();
  if (state == nullptr)
    return HttpResponse::Text(503, absl::StrCat("recovering: ", progress_->Read().Describe(), "\n"));
  uint32_t recent = 0;
  const std::string_view text = request.Query("recent", "64");
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &recent)) {
    return HttpResponse::Text(400, "recent must be a non-negative integer\n");
  }
  ::revkv::v1::GetStatsResponse stats;
  FillStats(state, recent, &stats);
  // revkv's one JSON style (snake_case names, integers as numbers), as `revkv gc stats --json` writes it.
  return HttpResponse::Json(200, ProtoToJson(stats).dump(2) + "\n");
}

}  // namespace revkv::server
