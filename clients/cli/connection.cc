// The connection of a revkv command, and the translation of gRPC failures into user messages.
#include "clients/cli/connection.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/cli/exit_status.h"
#include "clients/common/endpoint.h"
#include "clients/common/grpc_status.h"

namespace revkv::client {
namespace {

// How long the probe that explains a failed dial may take.
constexpr absl::Duration kProbeTimeout = absl::Seconds(1);

absl::StatusCode ToAbslCode(grpc::StatusCode code) { return static_cast<absl::StatusCode>(code); }

}  // namespace

Connection::Connection(std::string endpoint, std::shared_ptr<grpc::Channel> channel,
                       absl::Duration command_timeout)
    : endpoint_(std::move(endpoint)),
      channel_(std::move(channel)),
      command_timeout_(command_timeout),
      kv_(etcdserverpb::KV::NewStub(channel_)),
      maintenance_(etcdserverpb::Maintenance::NewStub(channel_)),
      admin_(revkv::v1::Admin::NewStub(channel_)) {}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const GlobalOptions& options) {
  absl::StatusOr<std::vector<Endpoint>> endpoints = ParseEndpoints(options.endpoints);
  if (!endpoints.ok()) return UsageError(absl::StrCat("--endpoints: ", endpoints.status().message()));
  absl::StatusOr<ChannelFactory> factory = ChannelFactory::Create(options.transport);
  if (!factory.ok()) return UsageError(factory.status().message());
  const Endpoint& endpoint = endpoints->front();
  std::unique_ptr<Connection> connection(
      new Connection(endpoint.target, factory->Connect(endpoint, 0), options.command_timeout));
  if (absl::Status dialed = connection->Dial(options.transport.dial_timeout); !dialed.ok()) return dialed;
  return connection;
}

absl::Status Connection::Dial(absl::Duration dial_timeout) const {
  // Wait for READY, but give up at the first failed attempt (a refused connection fails at once rather
  // than after --dial-timeout) or at the deadline (a host that does not answer).
  const auto deadline = absl::ToChronoTime(absl::Now() + dial_timeout);
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY && state != GRPC_CHANNEL_TRANSIENT_FAILURE &&
         state != GRPC_CHANNEL_SHUTDOWN) {
    if (!channel_->WaitForStateChange(state, deadline)) break;
    state = channel_->GetState(/*try_to_connect=*/true);
  }
  if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
  // gRPC keeps the reason of a failed connection attempt to itself; a fail-fast call on the channel
  // reports it ("failed to connect to all addresses; last error: ... Connection refused").
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kProbeTimeout));
  etcdserverpb::StatusResponse ignored;
  const grpc::Status probe = maintenance_->Status(&context, etcdserverpb::StatusRequest(), &ignored);
  if (probe.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", endpoint_, ": ", probe.error_message()));
  }
  if (probe.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", endpoint_, ": no connection within ",
                                               absl::FormatDuration(dial_timeout), " (--dial-timeout)"));
  }
  return absl::OkStatus();  // the probe got an answer: the server is there after all
}

std::unique_ptr<grpc::ClientContext> Connection::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + command_timeout_));
  return context;
}

absl::Status Connection::Check(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  const absl::StatusCode code = ToAbslCode(status.error_code());
  const std::string& message = status.error_message();
  if (absl::StartsWith(message, "etcdserver:")) return absl::Status(code, message);
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::Status(code, absl::StrCat("cannot reach ", endpoint_, ": ", message));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::Status(code, absl::StrCat(endpoint_, ": no answer within ",
                                             absl::FormatDuration(command_timeout_), " (--command-timeout)"));
    default:
      return absl::Status(code, absl::StrCat(endpoint_, ": ", StatusCodeName(status.error_code()), ": ",
                                             message.empty() ? "(no message)" : message));
  }
}

}  // namespace revkv::client
