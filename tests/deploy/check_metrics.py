#!/usr/bin/env python3
"""deploy_metrics_names: every metric the Grafana dashboard and the Prometheus rules name is one a running
revkv-server exports. Starts the built server on free ports, sends it a few requests with etcdctl (when
installed), scrapes /metrics, and checks each PromQL expression of the dashboard (panels and template
variables) and of the rules:

- every revkv_ metric it names appears in the scrape (`up` is Prometheus' own);
- every label matched with = has that value on some series of the metric, and each alternative of a
  =~ "a|b" match likewise (job and instance come from Prometheus, not the server);
- every label of a `by (...)` clause is a label of one of the metrics in the expression.

The dashboard must also be valid JSON with a query in every panel.

    check_metrics.py <source dir> <revkv-server> <revkv-healthcheck>
"""
import json
import os
import re
import subprocess
import sys

import yaml

from deploytest import RunningServer, fail, main, need_tool

TARGET_LABELS = {"job", "instance"}  # attached by Prometheus at scrape time
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
PROMQL_WORDS = {"sum", "rate", "increase", "histogram_quantile", "max", "min", "avg", "by", "without", "le",
                "label_values", "count", "irate", "on", "ignoring", "group_left", "group_right", "bool",
                "and", "or", "unless", "offset", "humanizeDuration"}


def scrape_series(text):
    """metric name -> list of label dicts, from Prometheus text."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"/metrics has a line that is not a sample: {line!r}")
        series.setdefault(m.group(1), []).append(dict(LABEL.findall(m.group(3) or "")))
    return series


def check_expression(where, expr, series):
    # Drop Grafana's $variables inside quoted matchers and $__interval-style ranges.
    names = []
    for m in SELECTOR.finditer(re.sub(r"\[[^\]]*\]", "", expr)):
        name, braces = m.group(1), m.group(2) or ""
        if name in PROMQL_WORDS or not (name.startswith("revkv_") or name == "up"):
            if name.startswith("revkv") and name not in series:
                fail(f"{where}: {name} is not exported")
            continue
        if name == "up":
            continue
        if name not in series:
            fail(f"{where}: {name} is not exported by revkv-server (expression: {expr})")
        names.append(name)
        for label, op, value in MATCHER.findall(braces):
            if label in TARGET_LABELS or "$" in value:
                continue
            present = {s.get(label) for s in series[name]}
            if op == "=":
                wanted = [value]
            elif op == "=~" and re.fullmatch(r"[\w.+-]+(\|[\w.+-]+)*", value):
                wanted = value.split("|")
            else:
                continue
            for v in wanted:
                if v not in present:
                    fail(f'{where}: no series {name}{{{label}="{v}"}} (values: {sorted(x for x in present if x)})')
    if not names and "up{" not in expr and "up " not in expr:
        fail(f"{where}: names no revkv_ metric: {expr}")
    for clause in BY.findall(expr):
        for label in (l.strip() for l in clause.split(",")):
            if not label or label in TARGET_LABELS:
                continue
            if not any(label in s for n in names for s in series[n]):
                fail(f"{where}: by ({label}) is not a label of {names}")
    return names


def dashboard_expressions(dashboard):
    exprs = []

    def walk(panels):
        for p in panels:
            if p.get("type") == "row":
                walk(p.get("panels", []))
                continue
            targets = p.get("targets", [])
            if not targets or not all(t.get("expr", "").strip() for t in targets):
                fail(f"dashboard panel '{p.get('title')}' has no query")
            if "gridPos" not in p or "datasource" not in p:
                fail(f"dashboard panel '{p.get('title')}' lacks gridPos or datasource")
            for t in targets:
                exprs.append((f"dashboard panel '{p.get('title')}' ({t.get('refId')})", t["expr"]))

    walk(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q or "")
            if not m:
                fail(f"dashboard variable {v.get('name')}: unexpected query {q}")
            exprs.append((f"dashboard variable {v['name']}", m.group(1)))
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        fail("dashboard panel ids are not unique")
    return exprs


def check():
    src, server, healthcheck = sys.argv[1:4]
    path = os.path.join(src, "deploy/grafana/revkv-dashboard.json")
    try:
        dashboard = json.load(open(path))
    except json.JSONDecodeError as e:
        fail(f"{path}: invalid JSON: {e}")
    for key in ("title", "uid", "panels", "schemaVersion"):
        if key not in dashboard:
            fail(f"dashboard lacks {key}")
    exprs = dashboard_expressions(dashboard)
    rules = yaml.safe_load(open(os.path.join(src, "deploy/prometheus/revkv.rules.yml")))
    for group in rules["groups"]:
        for rule in group["rules"]:
            exprs.append((f"rule {rule['alert']}", rule["expr"]))

    with RunningServer(server, [], healthcheck=healthcheck) as s:
        etcdctl = need_tool("etcdctl", "etcd-client")
        if etcdctl:
            endpoint = f"127.0.0.1:{s.grpc_port}"
            env = {**os.environ, "ETCDCTL_API": "3"}
            for args in (["put", "k", "v"], ["get", "k"], ["del", "k"]):
                subprocess.run([etcdctl, "--endpoints", endpoint, *args], env=env, check=True, capture_output=True)
        series = scrape_series(s.get("/metrics"))
    print(f"/metrics: {len(series)} series names")
    used = set()
    for where, expr in exprs:
        used |= set(check_expression(where, expr, series))
    print(f"{len(exprs)} expressions name {len(used)} metrics, all exported")
    families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in used}
    dashboard_text = json.dumps(dashboard)
    for required in ("revkv_gc_pause_seconds", "revkv_heap_bytes", "revkv_heap_pinned_bytes", "revkv_stm_commits_total",
                     "revkv_stm_aborts_total", "revkv_requests_total", "revkv_request_duration_seconds",
                     "revkv_wal_fsync_duration_seconds"):
        if required not in dashboard_text:
            fail(f"the dashboard does not show {required}")
    print(f"metric families used: {sorted(families)}")


if __name__ == "__main__":
    main(check)
