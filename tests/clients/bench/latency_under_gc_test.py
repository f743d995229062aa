#!/usr/bin/env python3
"""bench/server/latency_under_gc.py on a small store: both runs keep their rate, the forced collections
happened and were reported with their pauses, and the SVG has both runs' percentile lines and the pauses
that fell inside the measured time."""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

script, build = sys.argv[1], sys.argv[2]
out = tempfile.mkdtemp(prefix="revkv-lug-test.")
done = subprocess.run([sys.executable, script, "--build", build, "--out", out, "--keys", "2000",
                       "--value-size", "512", "--duration", "4", "--collect-every", "0.5",
                       "--max-heap", "1GiB"], capture_output=True, text=True, timeout=600)
assert done.returncode == 0, done.stderr[-3000:]
summary = json.load(open(os.path.join(out, "summary.json")))
assert summary["forced_collections"] >= 6, summary
assert summary["pause_ms"]["max"] > 0, summary
for run in "AB":
    report = json.load(open(os.path.join(out, run + ".json")))
    expected = summary["rate_ops_per_s"] * summary["duration_s"]
    assert abs(report["ops"] - expected) <= 0.2 * expected, (run, report["ops"], expected)
    assert report["errors"]["total"] == 0, report["errors"]
    assert len(report["timeline"]) >= 3, report["timeline"]
    assert all("p999_us" in s for s in report["timeline"])
    assert summary[run]["p99.9_us"] >= summary[run]["p50_us"] > 0, summary
svg = ET.parse(os.path.join(out, "latency_under_gc.svg")).getroot()
ns = "{http://www.w3.org/2000/svg}"
groups = svg.findall(f"{ns}g")
assert len(groups) == 2, len(groups)
for g in groups:
    lines = {p.get("class") for p in g.findall(f"{ns}polyline")}
    assert lines == {"p50", "p99", "p99.9"}, lines
pauses = [r for r in groups[1].findall(f"{ns}rect") if r.get("class") == "pause"]
assert len(pauses) >= 4, f"{len(pauses)} pauses marked in run B"
assert not [r for r in groups[0].findall(f"{ns}rect") if r.get("class") == "pause"]
print("ok:", json.dumps(summary["B_over_A"]))
