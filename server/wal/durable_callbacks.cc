// DurableCallbacks: Vyukov's intrusive MPSC queue plus the consumer's LSN-ordered pending list.
//
// Queue: head_ is the newest node; every node's `next` points to the one pushed after it. A push
// exchanges head_ (step 1) and then links the previous head to the new node (step 2). Between the two
// steps the chain is broken; the consumer sees that as head_ != its position with no `next` yet, and
// yields until step 2 lands. The stub node is re-pushed when the consumer reaches the last real node, so
// a node is only returned once something has been linked after it and no producer can still touch it.
#include "server/wal/durable_callbacks.h"

#include <thread>

namespace revkv::server {

DurableCallbacks::DurableCallbacks() : head_(&stub_), tail_(&stub_) {}

DurableCallbacks::~DurableCallbacks() {
  Collect();
  while (pending_head_ != nullptr) {
    DurableCallbackNode* node = pending_head_;
    pending_head_ = node->sorted_next;
    delete node;
  }
}

void DurableCallbacks::Push(DurableCallbackNode* node) {
  node->next.store(nullptr, std::memory_order_relaxed);
  DurableCallbackNode* prev = head_.exchange(node, std::memory_order_seq_cst);
  // Release: the consumer that follows this link (acquire) sees the node's lsn and callback.
  prev->next.store(node, std::memory_order_release);
}

DurableCallbackNode* DurableCallbacks::Pop() {
  for (;;) {
    DurableCallbackNode* tail = tail_;
    DurableCallbackNode* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) {
        // seq_cst: pairs with the producer's seq_cst exchange (see Push's contract).
        if (head_.load(std::memory_order_seq_cst) == &stub_) return nullptr;
        std::this_thread::yield();  // a producer is between its two steps
        continue;
      }
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (head_.load(std::memory_order_seq_cst) != tail) {
      std::this_thread::yield();  // a producer exchanged after `tail` and has not linked yet
      continue;
    }
    Push(&stub_);  // `tail` is the last node: put the stub behind it so it can be handed out
    next = tail->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    std::this_thread::yield();  // another producer got in before the stub; its link is coming
  }
}

void DurableCallbacks::InsertSorted(DurableCallbackNode* node) {
  node->sorted_next = nullptr;
  if (pending_head_ == nullptr) {
    pending_head_ = pending_tail_ = node;
    return;
  }
  if (node->lsn >= pending_tail_->lsn) {  // the common case: appended records arrive in LSN order
    pending_tail_->sorted_next = node;
    pending_tail_ = node;
    return;
  }
  if (node->lsn < pending_head_->lsn) {
    node->sorted_next = pending_head_;
    pending_head_ = node;
    return;
  }
  DurableCallbackNode* at = pending_head_;  // at->lsn <= node->lsn < pending_tail_->lsn
  while (at->sorted_next->lsn <= node->lsn) at = at->sorted_next;
  node->sorted_next = at->sorted_next;
  at->sorted_next = node;
}

void DurableCallbacks::Collect() {
  while (DurableCallbackNode* node = Pop()) InsertSorted(node);
}

uint64_t DurableCallbacks::Run(WalLsn durable, const absl::Status& failure) {
  uint64_t ran = 0;
  while (pending_head_ != nullptr && (pending_head_->lsn <= durable || !failure.ok())) {
    DurableCallbackNode* node = pending_head_;
    pending_head_ = node->sorted_next;
    if (pending_head_ == nullptr) pending_tail_ = nullptr;
    std::move(node->callback)(node->lsn <= durable ? absl::OkStatus() : failure);
    delete node;
    ++ran;
  }
  return ran;
}

bool DurableCallbacks::QueueEmpty() const {
  return tail_ == &stub_ && head_.load(std::memory_order_seq_cst) == &stub_;
}

}  // namespace revkv::server
