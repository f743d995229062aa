#!/usr/bin/env python3
"""revkv against the gRPC ceiling (revkv-null-server, callback API) across loads, with revkv-bench --compare.

    bench/server/latency_grid.py [--build build/main] [--out DIR] [--rounds 3] [--duration 3s]
                                 [--grid | --no-grid] [--pipeline-batches 1,16,64]

Starts revkv-server (--fsync always, a fresh data directory) and revkv-null-server (--api callback, the
ceiling) on loopback, then:

- the grid (docs/benchmarks.md, "Latency grid"): unary get and put at 1, 4 and 16 connections x 16
  and 256 in flight, each cell one `revkv-bench <workload> --compare NULL REVKV --rounds N` (alternating
  rounds, medians), reporting ops/s, p50 and p99 of both sides and revkv's p99 over the ceiling's
  (target: at most 2x);
- the Pipeline batches (docs/benchmarks.md, "Pipeline"): get and put with --mode pipeline --batch B
  (4 connections x 256 in flight) for each B of --pipeline-batches, the null server's batch method as the
  ceiling, single-key ops/s.

Every cell's JSON report is kept in --out; the tables are printed as Markdown and written to
--out/tables.md. Each section gets a fresh revkv-server, and runs its gets before its puts (puts grow
revkv's history, which reads of the newest revision still walk: docs/benchmarks.md, section 4.3).
Client and servers share the machine: quote ratios, and say how loaded it was.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REVKV_PORT, REVKV_OPS, NULL_PORT = 23891, 23892, 23895


def start(cmd, log):
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)


def wait_ready(bench, endpoint):
    for _ in range(100):
        r = subprocess.run([bench, "get", "--endpoints", endpoint, "--total", "1", "--warmup", "0s", "--keys",
                            "1", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return
        time.sleep(0.2)
    sys.exit(f"latency_grid.py: the server at {endpoint} did not come up")


def compare(args, name, workload, extra):
    """One revkv-bench --compare NULL REVKV run; returns its JSON report (also kept in --out)."""
    path = os.path.join(args.out, name + ".json")
    cmd = [args.bench, workload, "--compare", f"127.0.0.1:{NULL_PORT}", f"127.0.0.1:{REVKV_PORT}",
           "--rounds", str(args.rounds), "--duration", args.duration, "--warmup", args.warmup,
           "--value-size", "100", "--key-size", "16", "--keys", "10000", "--preload", "--quiet", "--json"] + extra
    print("$ " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
    with open(path, "w") as out, open(os.path.join(args.out, name + ".txt"), "w") as err:
        r = subprocess.run(cmd, stdout=out, stderr=err)
    if r.returncode != 0:
        sys.exit(f"latency_grid.py: {name} failed (see {args.out}/{name}.txt)")
    with open(path) as f:
        return json.load(f)


def fmt(v):
    return f"{v:,.0f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/main")
    p.add_argument("--out", default=None, help="where the reports go (default: a new /tmp directory)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", default="3s")
    p.add_argument("--warmup", default="1s")
    p.add_argument("--grid", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--pipeline-batches", default="1,16,64", help="batch sizes; empty: no Pipeline section")
    args = p.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args.out = args.out or tempfile.mkdtemp(prefix="revkv-grid.")
    os.makedirs(args.out, exist_ok=True)
    args.bench = os.path.join(args.build, "clients/bench/revkv-bench")
    server = os.path.join(args.build, "server/revkv-server")
    null_server = os.path.join(args.build, "bench/null_server/revkv-null-server")
    for b in (args.bench, server, null_server):
        if not os.access(b, os.X_OK):
            sys.exit(f"latency_grid.py: {b} is missing (build it first)")

    revkv = []

    def fresh_revkv(section):
        """(Re)starts revkv-server on a new data directory, so no section reads another's history."""
        if revkv:
            revkv[0].terminate()
            revkv[0].wait()
            revkv.clear()
        revkv.append(start([server, "--listen", f"127.0.0.1:{REVKV_PORT}", "--metrics-listen",
                            f"127.0.0.1:{REVKV_OPS}", "--data-dir", os.path.join(args.out, f"revkv-data-{section}"),
                            "--fsync", "always", "--log-level", "warn"],
                           os.path.join(args.out, f"revkv-{section}.log")))
        wait_ready(args.bench, f"127.0.0.1:{REVKV_PORT}")

    null = start([null_server, "--listen", f"127.0.0.1:{NULL_PORT}", "--api", "callback"],
                 os.path.join(args.out, "null.log"))
    tables = []
    try:
        wait_ready(args.bench, f"127.0.0.1:{NULL_PORT}")
        load = os.getloadavg()
        header = (f"Load average when starting: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
                  f"({os.cpu_count()} cores). {args.rounds} alternating rounds of {args.duration} "
                  f"(+{args.warmup} warm-up), medians. Reports: {args.out}")
        tables.append(header + "\n")
        if args.grid:
            fresh_revkv("grid")
            rows = ["| workload | connections x in flight | ceiling ops/s | ceiling p50 / p99 us | revkv ops/s "
                    "| revkv p50 / p99 us | revkv / ceiling ops/s | revkv / ceiling p99 | p99 within 2x |",
                    "|---|---|---:|---:|---:|---:|---:|---:|---|"]
            for workload in ("get", "put"):
                for conns in (1, 4, 16):
                    for inflight in (16, 256):
                        name = f"grid-{workload}-c{conns}-i{inflight}"
                        r = compare(args, name, workload,
                                    ["--connections", str(conns), "--inflight", str(inflight)])["compare"]
                        a, b = r["a"]["median"], r["b"]["median"]
                        ratio = b["p99_us"] / a["p99_us"] if a["p99_us"] else float("inf")
                        rows.append(
                            f"| {workload} | {conns} x {inflight} | {fmt(a['throughput_ops_per_s'])} "
                            f"| {fmt(a['p50_us'])} / {fmt(a['p99_us'])} | {fmt(b['throughput_ops_per_s'])} "
                            f"| {fmt(b['p50_us'])} / {fmt(b['p99_us'])} "
                            f"| {b['throughput_ops_per_s'] / a['throughput_ops_per_s']:.2f} | {ratio:.2f} "
                            f"| {'yes' if ratio <= 2 else 'NO'} |")
            tables.append("\n".join(rows) + "\n")
        batches = [int(b) for b in args.pipeline_batches.split(",") if b.strip()]
        if batches:
            fresh_revkv("pipeline")
            rows = ["| workload | batch | ceiling ops/s | ceiling client CPU % | revkv ops/s | revkv client CPU % "
                    "| revkv p50 / p99 us | revkv / ceiling |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for workload in ("get", "put"):
                for batch in batches:
                    name = f"pipeline-{workload}-b{batch}"
                    r = compare(args, name, workload, ["--mode", "pipeline", "--batch", str(batch),
                                                       "--connections", "4", "--inflight", "256"])["compare"]
                    a, b = r["a"]["median"], r["b"]["median"]
                    rows.append(
                        f"| {workload} | {batch} | {fmt(a['throughput_ops_per_s'])} | {a['client_cpu_percent']:.0f} "
                        f"| {fmt(b['throughput_ops_per_s'])} | {b['client_cpu_percent']:.0f} "
                        f"| {fmt(b['p50_us'])} / {fmt(b['p99_us'])} "
                        f"| {b['throughput_ops_per_s'] / a['throughput_ops_per_s']:.2f} |")
            tables.append("\n".join(rows) + "\n")
    finally:
        for proc in [null] + revkv:
            proc.terminate()
            proc.wait()
    text = "\n".join(tables)
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
