#!/usr/bin/env bash
# deploy_prometheus: promtool accepts the scrape configuration and the rules, and `promtool test rules`
# (revkv.rules.test.yml) shows each alert firing on series over its budget and silent on series within
# it. The unit tests compare labels only: annotations (prose) are stripped from a scratch copy of the
# rules first.
#
#   prometheus_test.sh <source dir>
source "$(dirname "$0")/lib.sh"
src=$1
command -v promtool >/dev/null || fail "promtool is missing (Debian package prometheus; scripts/setup installs it)"

note "promtool check config"
promtool check config "$src/deploy/prometheus/prometheus.yml" || fail "promtool check config"
note "promtool check rules"
promtool check rules "$src/deploy/prometheus/revkv.rules.yml" || fail "promtool check rules"

note "promtool test rules"
"$PY" - "$src/deploy/prometheus/revkv.rules.yml" "$SCRATCH/rules.yml" <<'PYEOF'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
for group in rules["groups"]:
    for rule in group["rules"]:
        if "annotations" not in rule:
            sys.exit(f"rule {rule.get('alert')} has no annotations")
        for key in ("summary", "description", "runbook"):
            if key not in rule["annotations"]:
                sys.exit(f"rule {rule.get('alert')} has no {key} annotation")
        rule.pop("annotations")
yaml.safe_dump(rules, open(sys.argv[2], "w"))
PYEOF
sed "s#../../deploy/prometheus/revkv.rules.yml#$SCRATCH/rules.yml#" "$(dirname "$0")/revkv.rules.test.yml" \
  >"$SCRATCH/rules.test.yml"
promtool test rules "$SCRATCH/rules.test.yml" || fail "promtool test rules"

note "every alert has a unit test and a runbook section in docs/operations.md"
for alert in $(sed -n 's/^ *- alert: *//p' "$src/deploy/prometheus/revkv.rules.yml"); do
  grep -q "alertname: $alert\$" "$(dirname "$0")/revkv.rules.test.yml" || fail "$alert has no test in revkv.rules.test.yml"
  grep -q "^### $alert\$" "$src/docs/operations.md" || fail "$alert has no '### $alert' section in docs/operations.md"
done
echo "PASS"
