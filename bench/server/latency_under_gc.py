#!/usr/bin/env python3
"""Request latency under forced major collections (docs/benchmarks.md, "Tail latency under a collection").

One revkv-server is loaded with KEYS keys of VALUE_SIZE bytes; its throughput for the workload is measured
closed-loop; then two open-loop runs at RATE_FRACTION of that throughput, the same length, one after the
other:
  A. no forced collections (the server collects only when its own triggers say so);
  B. a major collection forced every COLLECT_EVERY seconds (`revkv gc collect`, which waits for it).
Both runs pace with --rate-backlog, so a pause is measured in full: every request it delays is still sent
and timed from its scheduled start (no coordinated omission). The report gives p50/p99/p99.9 of both runs
and B's over A's; the SVG plots both runs' per-second p50/p99/p99.9 over time with B's pauses marked where
the server says they began (`start_unix_nanos`, aligned with the run's own start time). Client and server
share this machine.

  bench/server/latency_under_gc.py [--build build/main] [--out DIR] [--keys 1000000] [--value-size 1024]
      [--duration 30] [--workload mixed] [--rate-fraction 0.5] [--collect-every 1] [--max-heap 6GiB]

Writes DIR/summary.json, DIR/latency_under_gc.svg, the runs' JSON reports (A.json, B.json), the forced
collections as the server described them (collections.json) and the server's log.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_json(argv, timeout):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"latency_under_gc: {' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def percentiles(report):
    lat = report["latency_us"]
    return {"p50_us": lat["p50"], "p99_us": lat["p99"], "p99.9_us": lat["p99.9"], "max_us": lat["max"]}


def svg(runs, pauses, title):
    """Per-second p50/p99/p99.9 of each run, one panel per run; pauses as red bands in the panel of B."""
    width, left, right, panel, top, gap = 860, 70, 20, 200, 50, 60
    plot = width - left - right
    last = max([s["seconds"] for r in runs.values() for s in r["timeline"]] + [1.0])
    height = top + len(runs) * (panel + gap) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">{title}</text>']
    x_of = lambda seconds: left + plot * min(max(seconds, 0.0), last) / last
    colours = {"p50_us": "#2ca02c", "p99_us": "#d62728", "p999_us": "#9467bd"}
    for i, (name, report) in enumerate(runs.items()):
        y0 = top + i * (panel + gap)
        # Each run on its own scale: a run with pauses can be a thousand times slower than one without.
        top_ms = max([s["p999_us"] for s in report["timeline"]] + [1]) / 1000.0 * 1.1
        y_of = lambda ms: y0 + panel - panel * min(ms, top_ms) / top_ms
        out.append(f'<g class="run" data-run="{name}">')
        out.append(f'<text x="{left}" y="{y0 - 8}">{name}: request latency (ms) per second</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot}" height="{panel}" fill="none" stroke="#999"/>')
        for tick in range(5):
            ms = top_ms * tick / 4
            label = f"{ms:,.0f}" if top_ms >= 100 else f"{ms:.3g}"
            out.append(f'<line x1="{left}" x2="{left + plot}" y1="{y_of(ms):.1f}" y2="{y_of(ms):.1f}" '
                       f'stroke="#eee"/><text x="{left - 4}" y="{y_of(ms) + 4:.1f}" text-anchor="end">'
                       f'{label}</text>')
        for start, seconds in pauses.get(name, []):
            if start < 0 or start > last:
                continue  # during the warm-up, or after the last sample
            x = x_of(start)
            w = max(plot * seconds / last, 1.0)
            out.append(f'<rect class="pause" x="{x:.1f}" y="{y0}" width="{w:.1f}" height="{panel}" '
                       f'fill="#d62728" fill-opacity="0.25"><title>major collection, '
                       f'{seconds * 1000:.1f} ms</title></rect>')
        for k, (field, colour) in enumerate(colours.items()):
            points = " ".join(f"{x_of(s['seconds']):.1f},{y_of(s[field] / 1000.0):.1f}"
                              for s in report["timeline"])
            label = {"p50_us": "p50", "p99_us": "p99", "p999_us": "p99.9"}[field]
            out.append(f'<polyline class="{label}" fill="none" stroke="{colour}" stroke-width="1.5" '
                       f'points="{points}"/>')
            out.append(f'<text x="{left + plot - 60 * (3 - k)}" y="{y0 - 8}" fill="{colour}">{label}</text>')
        for tick in range(6):
            seconds = last * tick / 5
            out.append(f'<text x="{x_of(seconds):.1f}" y="{y0 + panel + 16}" text-anchor="middle">'
                       f'{seconds:.0f} s</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(here, "..", "..", "build", "main"))
    p.add_argument("--out", default="")
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--duration", type=float, default=30)
    p.add_argument("--workload", default="mixed", choices=["get", "put", "mixed"])
    p.add_argument("--rate-fraction", type=float, default=0.5)
    p.add_argument("--collect-every", type=float, default=1.0)
    p.add_argument("--max-heap", default="6GiB")
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--inflight", type=int, default=64)
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="revkv-gc-latency.")
    os.makedirs(out, exist_ok=True)
    server_bin = os.path.join(args.build, "server", "revkv-server")
    bench_bin = os.path.join(args.build, "clients", "bench", "revkv-bench")
    cli_bin = os.path.join(args.build, "clients", "cli", "revkv")
    for b in (server_bin, bench_bin, cli_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"latency_under_gc: {b} is missing (build it first)")

    port, ops_port = free_port(), free_port()
    endpoint = f"127.0.0.1:{port}"
    log = open(os.path.join(out, "server.log"), "w")
    server = subprocess.Popen([server_bin, "--listen", endpoint, "--metrics-listen", f"127.0.0.1:{ops_port}",
                               "--data-dir", os.path.join(out, "data"), "--max-heap", args.max_heap,
                               "--log-level", "warn"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while subprocess.run([cli_bin, "--endpoints", endpoint, "status"], capture_output=True).returncode != 0:
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"latency_under_gc: the server did not come up (log in {out}/server.log)")
            time.sleep(0.2)
        data = ["--keys", str(args.keys), "--value-size", str(args.value_size), "--key-size", "16",
                "--connections", str(args.connections), "--inflight", str(args.inflight), "--quiet", "--json"]
        started = time.time()
        run_json([bench_bin, "put", "--endpoints", endpoint, "--preload", "--total", "1", "--mode", "pipeline",
                  "--inflight", "256"] + data[:6] + ["--quiet", "--json"], timeout=3600)
        preload_seconds = time.time() - started
        run_json([cli_bin, "--endpoints", endpoint, "--command-timeout", "300s", "gc", "collect", "--json"], timeout=600)
        closed = run_json([bench_bin, args.workload, "--endpoints", endpoint, "--duration", "10s"] + data,
                          timeout=600)
        rate = closed["throughput_ops_per_s"] * args.rate_fraction
        paced = [bench_bin, args.workload, "--endpoints", endpoint, "--duration", f"{args.duration}s",
                 "--rate", f"{rate:.0f}", "--rate-backlog", "10s", "--warmup", "2s"] + data

        runs, pauses = {}, {}
        runs["A: no forced collection"] = run_json(paced, timeout=args.duration + 600)

        stop = threading.Event()
        collections = []

        def collect():
            while not stop.wait(args.collect_every):
                event = run_json([cli_bin, "--endpoints", endpoint, "--command-timeout", "300s", "gc", "collect", "--json"], timeout=600)
                collections.append(event["event"])

        collector = threading.Thread(target=collect)
        collector.start()
        try:
            b = run_json(paced, timeout=args.duration + 600)
        finally:
            stop.set()
            collector.join()
        runs[f"B: a major collection every {args.collect_every:g} s"] = b
        origin = b["measure_start_unix_us"] / 1e6
        pauses[next(reversed(runs))] = [(c["start_unix_nanos"] / 1e9 - origin, c["pause_nanos"] / 1e9)
                                        for c in collections]

        for name, report in runs.items():
            with open(os.path.join(out, name[0] + ".json"), "w") as f:
                json.dump(report, f, indent=1)
        with open(os.path.join(out, "collections.json"), "w") as f:
            json.dump({"measure_start_unix_us": b["measure_start_unix_us"], "collections": collections}, f,
                      indent=1)
        a, b = (percentiles(r) for r in runs.values())
        pause_ms = sorted(c["pause_nanos"] / 1e6 for c in collections)
        summary = {
            "keys": args.keys, "value_size": args.value_size, "workload": args.workload,
            "preload_seconds": round(preload_seconds, 1),
            "closed_loop_ops_per_s": closed["throughput_ops_per_s"], "rate_ops_per_s": round(rate),
            "duration_s": args.duration,
            "host_load_average": [r["host_load_average"] for r in runs.values()],
            "A": a, "B": b,
            "B_over_A": {k: round(b[k] / a[k], 2) if a[k] else None for k in a},
            "forced_collections": len(collections),
            "pause_ms": {"median": pause_ms[len(pause_ms) // 2] if pause_ms else None,
                         "max": pause_ms[-1] if pause_ms else None},
            "heap_bytes_after_last": collections[-1]["heap_bytes_after"] if collections else None,
        }
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        title = (f"revkv {args.workload}, {args.keys:,} keys x {args.value_size} B, open loop at "
                 f"{rate:,.0f} ops/s ({args.rate_fraction:g} of closed-loop)")
        with open(os.path.join(out, "latency_under_gc.svg"), "w") as f:
            f.write(svg(runs, pauses, title))
        print(json.dumps(summary, indent=1))
        print(f"latency_under_gc: reports, SVG and log in {out}", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
