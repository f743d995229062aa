// HubEventSource (hub_event_source.h).
#include "server/coord/hub_event_source.h"

#include <utility>
#include <vector>

#include "server/rpc/grpc_handoff.h"
#include "server/store/errors.h"

namespace revkv::server {

namespace {

// The state a subscription shares with the drains posted for it: executor only.
struct Subscriber {
  EventSource::OnEvents on_events;
  EventSource::OnEnd on_end;
  std::shared_ptr<watch::WatchStream> stream;
  bool ended = false;

  // Takes every queued response of the stream and calls the callbacks.
  void Drain() {
    etcdserverpb::WatchResponse response;
    while (!ended && stream->Next(&response)) {
      stream->WriteDone();
      if (response.canceled()) {
        ended = true;
        on_end(response.compact_revision() != 0 ? errors::Compacted()
                                                : absl::CancelledError(response.cancel_reason()));
        return;
      }
      if (response.events_size() > 0) {
        on_events(std::vector<mvccpb::Event>(response.events().begin(), response.events().end()));
      }
    }
  }
};

class HubSubscription final : public EventSubscription {
 public:
  HubSubscription(watch::WatchHub* hub, std::shared_ptr<Subscriber> subscriber)
      : hub_(hub), subscriber_(std::move(subscriber)) {}
  ~HubSubscription() override { hub_->CloseStream(subscriber_->stream.get()); }

 private:
  watch::WatchHub* const hub_;
  const std::shared_ptr<Subscriber> subscriber_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EventSubscription>> HubEventSource::Subscribe(const std::string& key,
                                                                             const std::string& range_end,
                                                                             int64_t start_revision,
                                                                             OnEvents on_events,
                                                                             OnEnd on_end) {
  TakeBackFromGrpc(this);  // handed over by RpcServer::Start
  auto subscriber = std::make_shared<Subscriber>();
  subscriber->on_events = std::move(on_events);
  subscriber->on_end = std::move(on_end);
  std::weak_ptr<Subscriber> weak = subscriber;
  RuntimeExecutor* executor = executor_;
  // Called under the hub's lock: only posts.
  subscriber->stream = hub_->OpenStream([weak, executor] {
    executor->Post([weak] {
      if (auto s = weak.lock()) s->Drain();
    });
  });
  etcdserverpb::WatchCreateRequest create;
  create.set_key(key);
  create.set_range_end(range_end);
  create.set_start_revision(start_revision);
  hub_->Create(subscriber->stream.get(), create);
  return std::make_unique<HubSubscription>(hub_, std::move(subscriber));
}

}  // namespace revkv::server
