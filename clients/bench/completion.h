// Completion-queue tags for revkv-bench's async calls.
//
// Every async gRPC operation is given a tag; the worker thread that drains the queue casts the tag back to
// a Completion and calls it with the operation's outcome. An object owns one Completion per kind of
// operation it posts (call finished, read, write, alarm), so one object can have several operations in
// flight. (bench/null_server has the same two classes: clients depend on nothing but proto/.)
#ifndef REVKV_CLIENTS_BENCH_COMPLETION_H_
#define REVKV_CLIENTS_BENCH_COMPLETION_H_

namespace revkv::client {

// The callback a completion-queue tag stands for. Owner thread only (the worker draining the queue).
class Completion {
 public:
  virtual ~Completion() = default;
  // Runs the continuation of the operation this tag was posted with; `ok` is gRPC's outcome flag.
  virtual void Complete(bool ok) = 0;
  void* tag() { return this; }
};

// A Completion that calls a member function of its owner.
template <class Owner>
class MemberCompletion final : public Completion {
 public:
  using Handler = void (Owner::*)(bool ok);
  MemberCompletion(Owner* owner, Handler handler) : owner_(owner), handler_(handler) {}
  void Complete(bool ok) override { (owner_->*handler_)(ok); }

 private:
  Owner* owner_;
  Handler handler_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_COMPLETION_H_
