// Small helpers for calling etcd's v3 API from the integration tests: request builders, a call with a
// deadline that returns status and response together, and gtest predicates on statuses and headers.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace revkv::integration {

// Every call the tests make has a deadline, so a hung server fails a test instead of stalling it.
inline constexpr std::chrono::seconds kCallTimeout{20};

inline std::unique_ptr<grpc::ClientContext> ContextWithDeadline(
    std::chrono::milliseconds timeout = kCallTimeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// The status and the response of one unary call.
template <class Response>
struct Reply {
  grpc::Status status;
  Response response;
};

// Calls `method` of `stub` with a kCallTimeout deadline. Blocks.
template <class Stub, class Request, class Response>
Reply<Response> Call(Stub* stub,
                     grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                     const Request& request) {
  Reply<Response> reply;
  auto context = ContextWithDeadline();
  reply.status = (stub->*method)(context.get(), request, &reply.response);
  return reply;
}

inline std::string StatusText(const grpc::Status& s) {
  return std::to_string(static_cast<int>(s.error_code())) + " \"" + s.error_message() + "\"";
}

inline ::testing::AssertionResult IsOk(const grpc::Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "status " << StatusText(s);
}

// The status has exactly this code and message.
inline ::testing::AssertionResult HasStatus(const grpc::Status& s, grpc::StatusCode code,
                                            const std::string& message) {
  if (s.error_code() == code && s.error_message() == message) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "status " << StatusText(s) << ", expected " << static_cast<int>(code) << " \"" << message << "\"";
}

// A response header names a cluster and a member (non-zero) and reflects `revision`.
inline ::testing::AssertionResult HeaderAt(const etcdserverpb::ResponseHeader& h, int64_t revision) {
  if (h.cluster_id() != 0 && h.member_id() != 0 && h.revision() == revision)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "header {cluster_id " << h.cluster_id() << ", member_id " << h.member_id() << ", revision "
         << h.revision() << "}, expected non-zero ids and revision " << revision;
}

// ----- request builders -----

inline etcdserverpb::PutRequest PutOf(const std::string& key, const std::string& value,
                                      bool prev_kv = false) {
  etcdserverpb::PutRequest r;
  r.set_key(key);
  r.set_value(value);
  r.set_prev_kv(prev_kv);
  return r;
}

inline etcdserverpb::RangeRequest RangeOf(const std::string& key, const std::string& range_end = "",
                                          int64_t revision = 0) {
  etcdserverpb::RangeRequest r;
  r.set_key(key);
  r.set_range_end(range_end);
  r.set_revision(revision);
  return r;
}

inline etcdserverpb::DeleteRangeRequest DeleteOf(const std::string& key, const std::string& range_end = "",
                                                 bool prev_kv = false) {
  etcdserverpb::DeleteRangeRequest r;
  r.set_key(key);
  r.set_range_end(range_end);
  r.set_prev_kv(prev_kv);
  return r;
}

// The range_end that makes [key, end) the keys starting with `prefix` (etcd's GetPrefixRangeEnd).
inline std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

inline etcdserverpb::RequestOp OpOf(const etcdserverpb::PutRequest& put) {
  etcdserverpb::RequestOp op;
  *op.mutable_request_put() = put;
  return op;
}
inline etcdserverpb::RequestOp OpOf(const etcdserverpb::RangeRequest& range) {
  etcdserverpb::RequestOp op;
  *op.mutable_request_range() = range;
  return op;
}
inline etcdserverpb::RequestOp OpOf(const etcdserverpb::DeleteRangeRequest& del) {
  etcdserverpb::RequestOp op;
  *op.mutable_request_delete_range() = del;
  return op;
}
inline etcdserverpb::RequestOp OpOf(const etcdserverpb::TxnRequest& txn) {
  etcdserverpb::RequestOp op;
  *op.mutable_request_txn() = txn;
  return op;
}

// A Txn without compares whose success branch is one Put.
inline etcdserverpb::TxnRequest PutTxn(const std::string& key, const std::string& value) {
  etcdserverpb::TxnRequest t;
  *t.add_success() = OpOf(PutOf(key, value));
  return t;
}

inline etcdserverpb::Compare CompareValue(const std::string& key, etcdserverpb::Compare::CompareResult result,
                                          const std::string& value) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::VALUE);
  c.set_result(result);
  c.set_value(value);
  return c;
}

inline etcdserverpb::Compare CompareVersion(const std::string& key,
                                            etcdserverpb::Compare::CompareResult result, int64_t version) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::VERSION);
  c.set_result(result);
  c.set_version(version);
  return c;
}

inline etcdserverpb::Compare CompareMod(const std::string& key, etcdserverpb::Compare::CompareResult result,
                                        int64_t mod_revision) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::MOD);
  c.set_result(result);
  c.set_mod_revision(mod_revision);
  return c;
}

inline etcdserverpb::Compare CompareCreate(const std::string& key,
                                           etcdserverpb::Compare::CompareResult result,
                                           int64_t create_revision) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::CREATE);
  c.set_result(result);
  c.set_create_revision(create_revision);
  return c;
}

// The outcome of one bidirectional stream: the responses, in the order read, and the final status.
template <class Response>
struct StreamResult {
  std::vector<Response> responses;
  grpc::Status status;
  int written = 0;  // requests the client managed to send
};

// Opens a stream with `open(context)` (a deadline of 60 s) and sends every request from a writer thread
// while this thread reads the answers, until the server ends the stream.
template <class Response, class Request, class Open>
StreamResult<Response> RunStream(Open open, const std::vector<Request>& requests) {
  StreamResult<Response> result;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = open(&context);
  std::atomic<int> written{0};  // read after the writer is joined; relaxed is enough
  std::thread writer([&] {
    for (const Request& r : requests) {
      if (!stream->Write(r)) break;  // the server ended the stream
      written.fetch_add(1, std::memory_order_relaxed);
    }
    stream->WritesDone();
  });
  Response response;
  while (stream->Read(&response)) result.responses.push_back(response);
  writer.join();
  result.status = stream->Finish();
  result.written = written.load(std::memory_order_relaxed);
  return result;
}

}  // namespace revkv::integration
