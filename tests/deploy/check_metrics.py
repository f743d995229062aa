#!/usr/bin/env python3
"""deploy_metrics_names: every metric the Grafana dashboard and the Prometheus rules name is one a running
revkv-server exports. Starts the built server on free ports, sends it a few requests with etcdctl (when
installed), scrapes /metrics, and checks each PromQL expression of the dashboard (panels and template
variables) and of the rules:

- every name in it is a PromQL function, aggregation or keyword, or a metric in the scrape (`up` is
  Prometheus' own): a misspelt metric or function fails, whatever its prefix;
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

from deploytest import RunningServer, TestFailure, fail, main, need_tool

TARGET_LABELS = {"job", "instance"}  # attached by Prometheus at scrape time
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
CLAUSE = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
# PromQL's functions, aggregation operators and keywords (Prometheus 2.x): any other name in an
# expression must be an exported metric.
PROMQL_WORDS = {
    # aggregation operators
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile",
    # keywords and binary operators
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
    "atan2", "inf", "nan",
    # functions
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp", "floor",
    "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "ln", "log2", "log10", "minute", "month", "predict_linear", "rate", "resets", "round",
    "scalar", "sgn", "sort", "sort_desc", "sqrt", "time", "timestamp", "vector", "year", "avg_over_time",
    "min_over_time", "max_over_time", "sum_over_time", "count_over_time", "quantile_over_time",
    "stddev_over_time", "stdvar_over_time", "last_over_time", "present_over_time", "acos", "acosh", "asin",
    "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg", "rad", "pi",
}


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


def outside_matchers(expr):
    """`expr` with string literals and Grafana $variables removed wherever they are not inside a {...}
    matcher list (where the matcher checks below read them)."""
    out, depth, i = [], 0, 0
    while i < len(expr):
        c = expr[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and c == '"':
            end = i + 1
            while end < len(expr) and expr[end] != '"':
                end += 2 if expr[end] == "\\" else 1
            i = end + 1
            out.append('""')
            continue
        elif depth == 0 and c == "$":
            m = GRAFANA_VARIABLE.match(expr, i)
            if m:
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def check_expression(where, expr, series):
    # Drop ranges and offsets' durations ([5m], [$__rate_interval]), Grafana's $variables outside
    # matchers, and the label lists of by/without/on/ignoring/group_* clauses (checked below): what is
    # left names functions, keywords and metrics, with their matchers.
    bare = CLAUSE.sub("", outside_matchers(re.sub(r"\[[^\]]*\]", "", expr)))
    names = []
    for m in SELECTOR.finditer(bare):
        name, braces = m.group(1), m.group(2) or ""
        if name in PROMQL_WORDS:
            continue
        if name == "up":
            continue
        if name not in series:
            fail(f"{where}: '{name}' is neither a PromQL function or keyword nor a metric revkv-server "
                 f"exports (expression: {expr})")
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


def self_check():
    """The expression check itself: misspelt metrics and functions fail, whatever their prefix, and a
    well-formed expression with Grafana variables passes."""
    series = {"revkv_requests_total": [{"method": "Put"}]}
    for bad in ("rat(revkv_requests_total[5m])",
                "histogram_quantil(0.99, revkv_requests_total)",
                "sum(revkv_request_total)",
                "sum by (method) (rate(requests_total[5m]))",
                'label_replace(revkv_requests_total, "a", "$1", "method", "(.*)") + typo_total',
                'revkv_requests_total{method="Get"}',
                "sum by (methods) (revkv_requests_total)"):
        try:
            check_expression("self-check", bad, series)
        except TestFailure:
            continue
        fail(f"self-check: the expression check accepted {bad!r}")
    for good in ('sum by (method) (rate(revkv_requests_total{method="Put", job=~"$job"}[$__rate_interval]))',
                 'label_replace(revkv_requests_total, "dst", "$1", "method", "(.*)")',
                 "up{job=\"revkv\"} == 0"):
        check_expression("self-check", good, series)


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
    self_check()
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
            # An error, so that the error counter (created at a method's first error with a code) exists.
            failed = subprocess.run([etcdctl, "--endpoints", endpoint, "compact", "1000000"], env=env,
                                    capture_output=True)
            if failed.returncode == 0:
                fail("etcdctl compact to a future revision succeeded")
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
