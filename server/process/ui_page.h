// The ops endpoint's /ui: one self-contained HTML page (no external script, style, font or image; the
// browser fetches nothing but this page, /debug/gc and /metrics from the same port) with live charts:
// GC pauses by kind, time-to-safepoint, the heap by space, STM commits and aborts per second, and
// request latency. Every second it reads /debug/gc (revkv's JSON style: snake_case, numbers) and
// /metrics (revkv_request_duration_seconds, differenced between two reads for the latency of the last
// second), keeps the last 120 samples and draws each chart on a <canvas>.
//
// For tests and scripts, each chart's <figure> carries what it drew: data-points (samples drawn),
// data-max (the largest value drawn) and data-inked (pixels of the canvas its lines coloured), and
// #status says when the page last updated or what failed ("recovering: ..." while the server recovers).
#pragma once

namespace revkv::server {

inline constexpr char kUiPage[] = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>revkv: live runtime view</title>
<style>
  body { font-family: sans-serif; margin: 16px; background: #fafafa; color: #222; }
  h1 { font-size: 18px; margin: 0 0 4px 0; }
  #status { font-size: 13px; color: #555; margin: 0 0 12px 0; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 12px; }
  figure { margin: 0; background: white; border: 1px solid #ddd; padding: 8px; }
  figcaption { font-size: 13px; font-weight: bold; margin-bottom: 4px; }
  .legend span { font-size: 12px; margin-right: 12px; }
  canvas { width: 520px; height: 180px; }
</style>
</head>
<body>
<h1>revkv: live runtime view</h1>
<p id="status">loading...</p>
<div class="grid">
  <figure id="chart-gc-pauses"><figcaption>GC pauses by kind, p99 (ms)</figcaption><canvas width="520" height="180"></canvas><div class="legend"></div></figure>
  <figure id="chart-safepoint"><figcaption>Time to safepoint (ms)</figcaption><canvas width="520" height="180"></canvas><div class="legend"></div></figure>
  <figure id="chart-heap"><figcaption>Heap by space (MiB)</figcaption><canvas width="520" height="180"></canvas><div class="legend"></div></figure>
  <figure id="chart-stm"><figcaption>STM commits and aborts per second</figcaption><canvas width="520" height="180"></canvas><div class="legend"></div></figure>
  <figure id="chart-latency"><figcaption>Request latency over the last second (ms)</figcaption><canvas width="520" height="180"></canvas><div class="legend"></div></figure>
</div>
<script>
"use strict";
const KEEP = 120;
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];
const charts = {
  "chart-gc-pauses": ["minor", "local", "major"],
  "chart-safepoint": ["p50", "p99", "max"],
  "chart-heap": ["nursery", "old", "large", "pinned", "free"],
  "chart-stm": ["commits/s", "read-only commits/s", "aborts/s"],
  "chart-latency": ["p50", "p99"],
};
const series = {};
for (const id in charts) series[id] = charts[id].map(() => []);
let previous = null;  // the last /debug/gc and request histogram read, for per-second rates
let previousBuckets = null;

function push(id, values) {
  values.forEach((v, i) => {
    const s = series[id][i];
    s.push(v);
    if (s.length > KEEP) s.shift();
  });
}

// The request duration histogram summed over methods: {le (seconds) -> cumulative count}.
function requestBuckets(text) {
  const buckets = new Map();
  for (const line of text.split("\n")) {
    if (!line.startsWith("revkv_request_duration_seconds_bucket{")) continue;
    const le = /le="([^"]+)"/.exec(line);
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!le) continue;
    const bound = le[1] === "+Inf" ? Infinity : Number(le[1]);
    buckets.set(bound, (buckets.get(bound) || 0) + value);
  }
  return buckets;
}

// The smallest bound whose count covers quantile q of what was added between two reads (ms).
function quantileMs(before, after, q) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const added = bounds.map(b => (after.get(b) || 0) - ((before && before.get(b)) || 0));
  const total = added.length ? added[added.length - 1] : 0;
  if (total <= 0) return 0;
  for (let i = 0; i < bounds.length; ++i) {
    if (added[i] >= q * total) return (bounds[i] === Infinity ? bounds[i - 1] || 0 : bounds[i]) * 1000;
  }
  return 0;
}

function draw(id) {
  const figure = document.getElementById(id);
  const canvas = figure.querySelector("canvas");
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 50, bottom = 16;
  ctx.fillStyle = "white";
  ctx.fillRect(0, 0, w, h);
  let top = 0;
  for (const s of series[id]) for (const v of s) top = Math.max(top, v);
  figure.dataset.max = String(top);
  top = top > 0 ? top * 1.1 : 1;
  ctx.strokeStyle = "#ccc";
  ctx.fillStyle = "#555";
  ctx.font = "11px sans-serif";
  for (let t = 0; t <= 4; ++t) {
    const y = (h - bottom) - (h - bottom - 4) * t / 4;
    ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(w, y); ctx.stroke();
    ctx.fillText((top * t / 4).toPrecision(3), 2, y + 4);
  }
  let points = 0;
  series[id].forEach((s, i) => {
    if (s.length === 0) return;
    points = Math.max(points, s.length);
    ctx.strokeStyle = COLOURS[i % COLOURS.length];
    ctx.lineWidth = 2;
    ctx.beginPath();
    s.forEach((v, k) => {
      const x = left + (w - left) * (s.length === 1 ? 1 : k / (KEEP - 1));
      const y = (h - bottom) - (h - bottom - 4) * v / top;
      if (k === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    if (s.length === 1) ctx.lineTo(left, (h - bottom) - (h - bottom - 4) * s[0] / top);
    ctx.stroke();
  });
  // What the lines coloured: pixels that are neither the white background nor a grey of the grid.
  const pixels = ctx.getImageData(left, 0, w - left, h - bottom).data;
  let inked = 0;
  for (let p = 0; p < pixels.length; p += 4) {
    const r = pixels[p], g = pixels[p + 1], b = pixels[p + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) > 40) ++inked;
  }
  figure.dataset.points = String(points);
  figure.dataset.inked = String(inked);
  figure.querySelector(".legend").innerHTML = charts[id].map((name, i) => {
    const s = series[id][i];
    const last = s.length ? s[s.length - 1] : 0;
    return '<span style="color:' + COLOURS[i % COLOURS.length] + '">' + name + ' ' + last.toPrecision(3) + '</span>';
  }).join("");
}

async function tick() {
  const status = document.getElementById("status");
  try {
    const [gcResponse, metricsResponse] = await Promise.all([fetch("/debug/gc?recent=0"), fetch("/metrics")]);
    if (!gcResponse.ok) {
      status.textContent = (await gcResponse.text()).trim();
      return;
    }
    const gc = await gcResponse.json();
    const buckets = requestBuckets(await metricsResponse.text());
    const ms = nanos => nanos / 1e6;
    const pauses = {};
    for (const p of gc.gc.pauses) pauses[p.kind] = ms(p.pause_p99_nanos);
    push("chart-gc-pauses", [pauses.MINOR || 0, pauses.LOCAL || 0, pauses.MAJOR || 0]);
    push("chart-safepoint", [ms(gc.gc.time_to_safepoint_p50_nanos), ms(gc.gc.time_to_safepoint_p99_nanos),
                             ms(gc.gc.time_to_safepoint_max_nanos)]);
    const mib = bytes => bytes / 1048576;
    push("chart-heap", [mib(gc.heap.nursery_bytes), mib(gc.heap.old_bytes), mib(gc.heap.large_bytes),
                        mib(gc.heap.pinned_bytes), mib(gc.heap.free_bytes)]);
    if (previous !== null) {
      const seconds = Math.max((gc.unix_nanos - previous.unix_nanos) / 1e9, 1e-3);
      const rate = (now, before) => Math.max(now - before, 0) / seconds;
      const aborts = s => s.aborts_read_conflict + s.aborts_lock + s.aborts_validation + s.aborts_doomed_by_gc;
      push("chart-stm", [rate(gc.stm.commits, previous.stm.commits),
                         rate(gc.stm.read_only_commits, previous.stm.read_only_commits),
                         rate(aborts(gc.stm), aborts(previous.stm))]);
      push("chart-latency", [quantileMs(previousBuckets, buckets, 0.5), quantileMs(previousBuckets, buckets, 0.99)]);
    }
    previous = gc;
    previousBuckets = buckets;
    for (const id in charts) draw(id);
    status.textContent = "revision " + gc.store.revision + ", " + gc.store.keys + " keys; updated " +
                         new Date(gc.unix_nanos / 1e6).toISOString() + "; " + series["chart-heap"][0].length + " samples";
  } catch (error) {
    status.textContent = "cannot read the server: " + error;
  }
}

tick();
setInterval(tick, 1000);
</script>
</body>
</html>
)html";

}  // namespace revkv::server
