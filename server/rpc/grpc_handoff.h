// Telling ThreadSanitizer how gRPC orders a call's events.
//
// gRPC orders the events of one call: starting an operation (a completion-queue Request, Read, Write or
// Finish with a tag; a reactor's StartRead, StartWrite or Finish) happens before its completion (the tag
// coming out of CompletionQueue::Next; OnReadDone, OnWriteDone), and every reaction of a callback call
// happens before its OnDone. Debian's gRPC is not built with -fsanitize=thread, so ThreadSanitizer sees
// none of the synchronisation behind that order and would report every hand-off of a call object from one
// thread to another through gRPC as a data race. These functions state the order at the hand-offs, on the
// object gRPC hands back (the tag or the reactor), so that races among revkv's own accesses to its call
// objects stay checked. In builds without ThreadSanitizer they compile to nothing.
//
// StartGrpcOperation also has ThreadSanitizer ignore the memory accesses that gRPC's header code (inlined
// into revkv, so instrumented) makes while it starts the operation, among them the serialisation of the
// response: they belong to gRPC's side of the hand-off, whose order TSan cannot see. What gRPC's code does
// on its own threads is covered by tests/sanitizer/tsan.supp, which says why each entry is a false report.
//
// Thread-safety: thread-safe.
#pragma once

#include <utility>

#if defined(__SANITIZE_THREAD__)
#define REVKV_GRPC_HANDOFF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REVKV_GRPC_HANDOFF_TSAN 1
#endif
#endif

#ifdef REVKV_GRPC_HANDOFF_TSAN
extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void __tsan_ignore_thread_begin();
void __tsan_ignore_thread_end();
}
#endif

namespace revkv::server {

// Everything this thread did so far happens before whatever follows a later TakeBackFromGrpc(object).
// Call it before handing `object` to gRPC; never after, when gRPC may already have deleted it.
inline void HandOverToGrpc([[maybe_unused]] const void* object) {
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_release(const_cast<void*>(object));
#endif
}

// Call when gRPC hands `object` back (a tag from Next, the reactor at the start of a reaction).
inline void TakeBackFromGrpc([[maybe_unused]] const void* object) {
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_acquire(const_cast<void*>(object));
#endif
}

// Runs `start`, a call into gRPC that starts an operation which gRPC will complete by handing back
// `object`, after HandOverToGrpc(object) and with ThreadSanitizer ignoring the accesses made in it.
template <class Start>
void StartGrpcOperation(const void* object, Start&& start) {
  HandOverToGrpc(object);
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_ignore_thread_begin();
#endif
  std::forward<Start>(start)();
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_ignore_thread_end();
#endif
}

// Deletes a callback reactor from its OnDone: takes it back, then destroys it with ThreadSanitizer
// ignoring the accesses, which are those of gRPC's base class (a Finish called before gRPC bound the
// reactor is held in the base class's pre-bind backlog, written by gRPC's code on the thread that bound
// it, in an order TSan cannot see). A reactor's own members are still checked up to the delete.
template <class Reactor>
void DeleteReactorFromGrpc(Reactor* reactor) {
  TakeBackFromGrpc(reactor);
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_ignore_thread_begin();
#endif
  delete reactor;
#ifdef REVKV_GRPC_HANDOFF_TSAN
  __tsan_ignore_thread_end();
#endif
}

// For the length of one reaction of a callback reactor (OnReadDone, OnWriteDone, OnCancel): takes the
// reactor back at the start and hands it over again at the end, for its OnDone. gRPC keeps the reactor
// alive until its reaction returns, so the hand-over at the end is safe even after Finish.
class GrpcReaction {
 public:
  explicit GrpcReaction(const void* reactor) : reactor_(reactor) { TakeBackFromGrpc(reactor_); }
  ~GrpcReaction() { HandOverToGrpc(reactor_); }
  GrpcReaction(const GrpcReaction&) = delete;
  GrpcReaction& operator=(const GrpcReaction&) = delete;

 private:
  const void* reactor_;
};

}  // namespace revkv::server
