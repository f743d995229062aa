// revkv-watch-bench: watch fan-out against etcd's v3 API (revkv or etcd), in alternating rounds.
//
//   revkv-watch-bench --compare 127.0.0.1:2379 127.0.0.1:22379 --watchers 1000 --writers 8 --in-flight 16
//   revkv-watch-bench --endpoints 127.0.0.1:2379 --idle-watchers 10000 --server-pid 1234
//
// A round: `--watchers` watchers on one prefix, spread over `--streams` Watch streams (each on its own
// connection, read by its own thread), all created before the writers start; `--writers` writers (each its
// own connection) then put keys under the prefix for `--duration`, each with `--in-flight` puts in flight
// (a thread per put in flight, each sending its next put when the last is answered), as fast as the server
// answers (or at `--rate` puts/s in all); each value carries the client's send time; every watcher receives
// every put. Since a put is answered only once durable, one put in flight per writer (the default, the
// earlier shape of this benchmark) measures the put path more than the delivery: enough puts in flight
// keep the writers from being what bounds the events delivered. Figures: puts/s, events delivered/s (all
// watchers), the fraction of the expected events (puts x watchers) delivered within 10 s of the writers
// stopping, and the delivery latency (send of the Put to receipt of its event, per watcher) p50/p99. With
// --compare (two or three endpoints), rounds alternate A B (C), (C) B A, ... and the medians per endpoint
// are printed, with the ratio of each endpoint's events/s to the last one's per round pair.
//
// Each round also prints the CPU the benchmark itself used (user + system, in cores: CPU seconds over the
// round's seconds), since on a small machine its readers share the cores with the server, and, given
// --server-pids (one per endpoint, in --compare's order), the server's.
//
// --idle-watchers: creates that many watchers (on one key nobody writes) and prints the growth of the
// server process's resident memory (read from /proc/<server-pid>/status) per watcher.
#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "clients/bench/histogram.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;
using revkv::client::LatencyHistogram;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string endpoints = "127.0.0.1:2379";
  std::vector<std::string> compare;
  int rounds = 3;
  int watchers = 1000;
  int streams = 10;
  int writers = 8;
  int in_flight = 1;  // puts in flight per writer
  int value_size = 100;
  double duration = 10;
  double rate = 0;  // total puts per second, paced; 0: as fast as the server answers
  int idle_watchers = 0;
  int server_pid = 0;
  std::vector<int> server_pids;  // per endpoint (--compare's order), for the servers' CPU
};

struct RoundResult {
  double puts_per_second = 0;
  double events_per_second = 0;
  uint64_t p50_us = 0;
  uint64_t p99_us = 0;
  uint64_t missing = 0;      // events not received within 10 s after the writers stopped
  uint64_t disorder = 0;     // events out of revision order for their watcher
  double delivered = 1;      // fraction of the expected events received
  double client_cores = 0;   // the benchmark's own CPU over the round (user + system), in cores
  double reader_cores = 0;   // of which its watch readers' (parsing and checking the events)
  double server_cores = -1;  // the server's, if its pid was given
  // The server's CPU per delivered event, in ns (if its pid was given): what delivery costs it, whatever
  // share of a loaded machine it got.
  double server_ns_per_event = -1;
};

// CPU seconds (user + system) this process has used so far.
double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// CPU seconds (user + system) process `pid` has used so far (/proc/<pid>/stat fields 14 and 15); -1 if
// it cannot be read.
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::shared_ptr<grpc::Channel> Channel(const std::string& endpoint, int id) {
  grpc::ChannelArguments args;
  args.SetInt("revkv.watch_bench.channel", id);  // a connection of its own
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// One stream with its watchers, read by one thread.
class Stream {
 public:
  Stream(const std::string& endpoint, int id, int watchers, const std::string& key, const std::string& end)
      : stub_(etcdserverpb::Watch::NewStub(Channel(endpoint, id))), watchers_(watchers) {
    rw_ = stub_->Watch(&context_);
    for (int i = 0; i < watchers; ++i) {
      WatchRequest r;
      r.mutable_create_request()->set_key(key);
      r.mutable_create_request()->set_range_end(end);
      rw_->Write(r);
    }
    WatchResponse resp;
    for (int created = 0; created < watchers && rw_->Read(&resp);) {
      if (resp.created()) ++created;
    }
  }
  void Start() {
    thread_ = std::thread([this] {
      // Each response is parsed into an arena that is reset after it (its first megabyte reused): the
      // events' messages and strings cost no malloc and free each, which was a fifth of this thread's CPU.
      std::vector<char> first_block(1 << 20);
      google::protobuf::ArenaOptions options;
      options.initial_block = first_block.data();
      options.initial_block_size = first_block.size();
      google::protobuf::Arena arena(options);
      // What it checks of what it counts: each watcher's events come in revision order.
      std::vector<int64_t> last_revision(watchers_, 0);
      for (;;) {
        auto* r = google::protobuf::Arena::CreateMessage<WatchResponse>(&arena);
        if (!rw_->Read(r)) break;
        const int64_t now = NowNanos();
        int64_t* last =
            r->watch_id() >= 0 && r->watch_id() < watchers_ ? &last_revision[r->watch_id()] : nullptr;
        for (const auto& e : r->events()) {
          const std::string& value = e.kv().value();
          int64_t sent = 0;
          std::from_chars(value.data(), value.data() + value.size(), sent);
          histogram_.Record(static_cast<uint64_t>(std::max<int64_t>(0, now - sent) / 1000));
          if (last == nullptr || e.kv().mod_revision() < *last) {
            disorder_.fetch_add(1, std::memory_order_relaxed);
          } else {
            *last = e.kv().mod_revision();
          }
        }
        events_.fetch_add(static_cast<uint64_t>(r->events_size()), std::memory_order_relaxed);
        arena.Reset();
      }
      timespec cpu{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
      cpu_seconds_ = static_cast<double>(cpu.tv_sec) + cpu.tv_nsec / 1e9;
    });
  }
  void Stop() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }
  uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  // Events out of revision order for their watcher, or for a watch id this stream did not create.
  uint64_t disorder() const { return disorder_.load(std::memory_order_relaxed); }
  const LatencyHistogram& histogram() const { return histogram_; }  // after Stop
  double cpu_seconds() const { return cpu_seconds_; }               // the reader thread's, after Stop

 private:
  std::unique_ptr<etcdserverpb::Watch::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<WatchRequest, WatchResponse>> rw_;
  std::thread thread_;
  const int watchers_;  // ids 0 .. watchers_ - 1 (server-chosen, from 0)
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> disorder_{0};
  LatencyHistogram histogram_;
  double cpu_seconds_ = 0;  // written by the reader thread before it ends (read after the join)
};

RoundResult Round(const Options& o, const std::string& endpoint, int server_pid, int round) {
  const std::string prefix = "fanout/" + std::to_string(round) + "/";
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int s = 0; s < o.streams; ++s) {
    const int n = o.watchers / o.streams + (s < o.watchers % o.streams ? 1 : 0);
    streams.push_back(std::make_unique<Stream>(endpoint, 100 + s, n, prefix, end));
  }
  for (auto& s : streams) s->Start();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> puts{0};
  std::vector<std::thread> writers;
  const double client_cpu_start = SelfCpuSeconds();
  const double server_cpu_start = server_pid > 0 ? ProcessCpuSeconds(server_pid) : -1;
  const auto start = Clock::now();
  std::vector<std::shared_ptr<etcdserverpb::KV::Stub>> stubs;
  for (int w = 0; w < o.writers; ++w) stubs.push_back(etcdserverpb::KV::NewStub(Channel(endpoint, w)));
  const int threads = o.writers * o.in_flight;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      const int w = t % o.writers;  // the writer (connection) this put in flight belongs to
      etcdserverpb::KV::Stub* kv = stubs[w].get();
      const auto interval = std::chrono::duration<double>(o.rate > 0 ? threads / o.rate : 0);
      auto next = Clock::now();
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        if (o.rate > 0) {
          next += std::chrono::duration_cast<Clock::duration>(interval);
          std::this_thread::sleep_until(next);
        }
        etcdserverpb::PutRequest p;
        p.set_key(prefix + std::to_string(w) + "/" + std::to_string(t / o.writers) + "/" +
                  std::to_string(i % 100));
        std::string value = std::to_string(NowNanos());
        value.resize(std::max<size_t>(value.size(), static_cast<size_t>(o.value_size)), ' ');
        p.set_value(value);
        grpc::ClientContext c;
        c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        etcdserverpb::PutResponse resp;
        if (!kv->Put(&c, p, &resp).ok()) continue;
        puts.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  stop = true;
  for (auto& t : writers) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t expected = puts.load() * static_cast<uint64_t>(o.watchers);
  auto delivered = [&] {
    uint64_t n = 0;
    for (auto& s : streams) n += s->events();
    return n;
  };
  const auto drain_deadline = Clock::now() + std::chrono::seconds(10);
  while (delivered() < expected && Clock::now() < drain_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double delivery_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t got = delivered();
  const double cpu_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double client_cpu = SelfCpuSeconds() - client_cpu_start;
  const double server_cpu = server_pid > 0 ? ProcessCpuSeconds(server_pid) - server_cpu_start : -1;
  LatencyHistogram all;
  double reader_cpu = 0;
  uint64_t r_disorder = 0;
  for (auto& s : streams) {
    s->Stop();
    all.Merge(s->histogram());
    reader_cpu += s->cpu_seconds();
    r_disorder += s->disorder();
  }
  const double reader_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RoundResult r;
  r.puts_per_second = static_cast<double>(puts.load()) / seconds;
  r.events_per_second = static_cast<double>(got) / std::max(seconds, delivery_seconds);
  const revkv::runtime::HistogramSnapshot latencies = all.Snapshot();
  r.p50_us = latencies.ValueAtPercentile(50);
  r.p99_us = latencies.ValueAtPercentile(99);
  r.missing = got >= expected ? 0 : expected - got;
  r.disorder = r_disorder;
  r.delivered = expected == 0 ? 1 : static_cast<double>(got) / static_cast<double>(expected);
  r.client_cores = client_cpu / cpu_seconds;
  r.reader_cores = reader_cpu / reader_seconds;
  if (server_pid > 0 && server_cpu_start >= 0 && server_cpu >= 0) {
    r.server_cores = server_cpu / cpu_seconds;
    if (got > 0) r.server_ns_per_event = server_cpu * 1e9 / static_cast<double>(got);
  }
  return r;
}

uint64_t ResidentBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

int IdleWatchers(const Options& o) {
  const uint64_t before = ResidentBytes(o.server_pid);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int s = 0; s < o.streams; ++s) {
    const int n = o.idle_watchers / o.streams + (s < o.idle_watchers % o.streams ? 1 : 0);
    streams.push_back(std::make_unique<Stream>(o.endpoints, 100 + s, n, "idle-watch-key", ""));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const uint64_t after = ResidentBytes(o.server_pid);
  std::printf("%d idle watchers on %d streams: server RSS %.1f MiB -> %.1f MiB, %.0f bytes per watcher\n",
              o.idle_watchers, o.streams, before / 1048576.0, after / 1048576.0,
              (static_cast<double>(after) - static_cast<double>(before)) / o.idle_watchers);
  for (auto& s : streams) s->Stop();
  return 0;
}

constexpr const char* kLabels[] = {"A", "B", "C"};  // --compare's endpoints, in order

void Print(const char* label, const std::string& endpoint, int round, const RoundResult& r) {
  std::printf(
      "%s %-22s round %d: %8.0f puts/s %10.0f events/s  delivered %7.3f%%  latency p50 %6.2f ms p99 %7.2f "
      "ms  cpu: client %.2f (readers %.2f) server %s cores, %s ns/event%s%s\n",
      label, endpoint.c_str(), round, r.puts_per_second, r.events_per_second, 100 * r.delivered,
      r.p50_us / 1000.0, r.p99_us / 1000.0, r.client_cores, r.reader_cores,
      r.server_cores < 0 ? "-" : std::to_string(r.server_cores).substr(0, 4).c_str(),
      r.server_ns_per_event < 0 ? "-" : std::to_string(static_cast<int>(r.server_ns_per_event)).c_str(),
      r.missing > 0 ? "  (events missing!)" : "", r.disorder > 0 ? "  (events out of order!)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("revkv-watch-bench: watch fan-out (events delivered/s, delivery latency) for etcd's v3 API");
  app.add_option("--endpoints", o.endpoints, "the endpoint (host:port)");
  app.add_option("--compare", o.compare, "two or three endpoints, measured in alternating rounds")
      ->expected(2, 3);
  app.add_option("--rounds", o.rounds, "rounds per endpoint with --compare");
  app.add_option("--watchers", o.watchers, "watchers on the prefix");
  app.add_option("--streams", o.streams,
                 "Watch streams (each its own connection) the watchers are spread over");
  app.add_option("--writers", o.writers, "writers, each with its own connection");
  app.add_option("--in-flight", o.in_flight,
                 "puts in flight per writer (1: the earlier shape, writers bound by the put path)")
      ->check(CLI::PositiveNumber);
  app.add_option("--value-size", o.value_size, "bytes per value");
  app.add_option("--duration", o.duration, "seconds of writing per round");
  app.add_option("--rate", o.rate, "total puts per second, paced (0: as fast as the server answers)");
  app.add_option("--idle-watchers", o.idle_watchers, "measure server memory per idle watcher instead");
  app.add_option("--server-pid", o.server_pid, "the server's process id (for --idle-watchers)");
  app.add_option("--server-pids", o.server_pids,
                 "the servers' process ids, one per endpoint in --compare's order (their CPU per round)");
  CLI11_PARSE(app, argc, argv);
  if (o.idle_watchers > 0) return IdleWatchers(o);
  std::vector<std::string> targets = o.compare.empty() ? std::vector<std::string>{o.endpoints} : o.compare;
  std::vector<std::vector<RoundResult>> results(targets.size());
  const int rounds = o.compare.empty() ? 1 : o.rounds;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < targets.size(); ++k) {
      const size_t t = round % 2 == 0 ? k : targets.size() - 1 - k;  // A B, B A, ...
      const int pid = t < o.server_pids.size() ? o.server_pids[t] : 0;
      RoundResult r = Round(o, targets[t], pid, round);
      Print(kLabels[t], targets[t], round, r);
      results[t].push_back(r);
    }
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    auto median = [&](auto field) {
      std::vector<double> v;
      for (const auto& r : results[t]) v.push_back(static_cast<double>(field(r)));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf(
        "median %s %-22s: %8.0f puts/s %10.0f events/s  delivered %7.3f%%  latency p50 %6.2f ms p99 %7.2f "
        "ms  cpu: client %.2f (readers %.2f) server %.2f cores, %.0f ns/event\n",
        kLabels[t], targets[t].c_str(), median([](auto& r) { return r.puts_per_second; }),
        median([](auto& r) { return r.events_per_second; }),
        100 * median([](auto& r) { return r.delivered; }), median([](auto& r) { return r.p50_us; }) / 1000.0,
        median([](auto& r) { return r.p99_us; }) / 1000.0, median([](auto& r) { return r.client_cores; }),
        median([](auto& r) { return r.reader_cores; }), median([](auto& r) { return r.server_cores; }),
        median([](auto& r) { return r.server_ns_per_event; }));
  }
  // Each endpoint's events/s over the last endpoint's, per round (the rounds measured next to each other):
  // the ratios and their median.
  for (size_t t = 0; t + 1 < targets.size(); ++t) {
    std::vector<double> ratios;
    for (size_t i = 0; i < results[t].size(); ++i)
      ratios.push_back(results[t][i].events_per_second / results.back()[i].events_per_second);
    std::printf("events/s %s / %s per round:", kLabels[t], kLabels[targets.size() - 1]);
    for (double x : ratios) std::printf(" %.2f", x);
    std::sort(ratios.begin(), ratios.end());
    std::printf("  median %.2f\n", ratios[ratios.size() / 2]);
  }
  return 0;
}
