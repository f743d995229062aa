// etcd's simple tokens (simple_token.h).
#include "server/auth/simple_token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace revkv::server::auth {

namespace {

constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";  // etcd's

// Fills `out` from the kernel's cryptographic random source (getrandom(2), blocking until it is seeded).
void RandomBytes(unsigned char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      std::perror("revkv: getrandom");
      std::abort();
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
}

// A uniformly random letter (rejection sampling: 52 does not divide 256).
char RandomLetter() {
  for (;;) {
    unsigned char b = 0;
    RandomBytes(&b, 1);
    if (b < 4 * kLetters.size()) return kLetters[b % kLetters.size()];
  }
}

}  // namespace

std::optional<SimpleToken> ParseSimpleToken(std::string_view token) {
  // Go's strings.Split(token, "."): exactly two parts.
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos || token.find('.', dot + 1) != std::string_view::npos)
    return std::nullopt;
  std::string_view number = token.substr(dot + 1);
  // strconv.Atoi: an optional sign, then at least one decimal digit, nothing else, within int64.
  bool negative = false;
  if (!number.empty() && (number[0] == '+' || number[0] == '-')) {
    negative = number[0] == '-';
    number.remove_prefix(1);
  }
  if (number.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  const uint64_t limit =
      negative ? uint64_t{1} << 63 : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (limit - digit) / 10) return std::nullopt;  // out of range
    magnitude = magnitude * 10 + digit;
  }
  SimpleToken parsed;
  parsed.prefix = token.substr(0, dot);
  parsed.index = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return parsed;
}

SimpleTokens::SimpleTokens(std::chrono::seconds ttl, Clock clock) : ttl_(ttl), clock_(std::move(clock)) {}

std::chrono::steady_clock::time_point SimpleTokens::Now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void SimpleTokens::RemoveExpiredLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    it = it->second.expires <= now ? tokens_.erase(it) : std::next(it);
  }
}

std::string SimpleTokens::Assign(const std::string& user, int64_t index) {
  const auto now = Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (++assigned_ % 64 == 0) RemoveExpiredLocked(now);
  for (;;) {
    std::string token;
    token.reserve(kSimpleTokenLetters + 21);
    for (size_t i = 0; i < kSimpleTokenLetters; ++i) token.push_back(RandomLetter());
    token += "." + std::to_string(index);
    // 52^16 tokens: a collision is next to impossible, but one must never hand a token out twice.
    if (tokens_.emplace(token, Entry{user, now + ttl_}).second) return token;
  }
}

std::optional<std::string> SimpleTokens::Lookup(std::string_view token) {
  if (!ParseSimpleToken(token).has_value()) return std::nullopt;
  const auto now = Now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    tokens_.erase(it);
    return std::nullopt;
  }
  it->second.expires = now + ttl_;  // etcd's resetSimpleToken
  return it->second.user;
}

void SimpleTokens::InvalidateUser(const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  if (user.empty()) {
    tokens_.clear();
    return;
  }
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    it = it->second.user == user ? tokens_.erase(it) : std::next(it);
  }
}

size_t SimpleTokens::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_.size();
}

}  // namespace revkv::server::auth
