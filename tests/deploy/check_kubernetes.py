#!/usr/bin/env python3
"""deploy_kubernetes: the manifests in deploy/kubernetes are valid YAML, the kustomizations refer to files
that exist, and in the base and in every overlay each port, probe, mount, selector and size agrees with
the revkv-server flags in the StatefulSet's args. Then revkv-server really starts with each variant's
ConfigMap file and args (ports and data directory overridden) and answers its health checks.

Each kustomization is checked as `kubectl kustomize` renders it when kubectl is installed, and always as
this script merges it from its files (resources, configMapGenerator, and strategic-merge patches, with
named list items merged by name), so that CI without kubectl checks the overlays too. Patches may not
touch container ports or volume mounts, whose merge rules that simple merge does not follow.

    check_kubernetes.py <source dir> <revkv-server> <revkv-healthcheck>
"""
import glob
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from deploytest import RunningServer, fail, main, parse_flags, split_address

OPS_PATHS = {"/healthz", "/metrics", "/debug/gc"}
NON_HEAP_MIB = 128  # the sizing rule of docs/operations.md: memory limit = max_heap + 128 MiB


def load_yaml(path):
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        fail(f"{path}: invalid YAML: {e}")


def quantity_mib(q):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti)?", str(q))
    if not m:
        fail(f"memory quantity '{q}' is not in Ki/Mi/Gi/Ti")
    scale = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024, None: 1 / (1024 * 1024)}[m.group(2)]
    return float(m.group(1)) * scale


def toml_value(text, key):
    m = re.search(rf'^{key}\s*=\s*"?([^"#\n]*?)"?\s*(#.*)?$', text, re.M)
    return m.group(1).strip() if m else None


def size_mib(text):
    m = re.fullmatch(r"(\d+)(MiB|GiB)", text)
    if not m:
        fail(f"max_heap '{text}' should be written in MiB or GiB")
    return int(m.group(1)) * (1024 if m.group(2) == "GiB" else 1)


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def dockerfile_uid(src):
    text = open(os.path.join(src, "deploy/container/Dockerfile")).read()
    m = re.search(r"^USER\s+(\d+)", text, re.M)
    if not m:
        fail("deploy/container/Dockerfile has no numeric USER")
    return int(m.group(1))


# ----- kustomization structure -----------------------------------------------------------------------

def check_kustomization(path, seen):
    """Checks the files a kustomization names; returns the (kind, name) of every resource it builds."""
    root = os.path.dirname(path)
    k = load_yaml(path)[0]
    if k.get("kind") != "Kustomization":
        fail(f"{path}: kind is not Kustomization")
    resources = set()
    for r in k.get("resources", []):
        target = os.path.normpath(os.path.join(root, r))
        if os.path.isdir(target):
            inner = os.path.join(target, "kustomization.yaml")
            if not os.path.isfile(inner):
                fail(f"{path}: resource {r} is a directory without kustomization.yaml")
            resources |= check_kustomization(inner, seen)
        elif os.path.isfile(target):
            seen.add(target)
            for d in load_yaml(target):
                for field in ("apiVersion", "kind", "metadata"):
                    if field not in d:
                        fail(f"{target}: a document lacks {field}")
                resources.add((d["kind"], d["metadata"]["name"]))
        else:
            fail(f"{path}: resource {r} does not exist")
    for g in k.get("configMapGenerator", []):
        for f in g.get("files", []):
            target = os.path.join(root, f.split("=", 1)[-1])
            if not os.path.isfile(target):
                fail(f"{path}: configMapGenerator file {f} does not exist")
            seen.add(os.path.normpath(target))
        if g.get("behavior") in ("replace", "merge") and ("ConfigMap", g["name"]) not in resources:
            fail(f"{path}: configMapGenerator {g['name']} replaces a ConfigMap the bases do not generate")
        resources.add(("ConfigMap", g["name"]))
    for p in k.get("patches", []) + [{"path": p} for p in k.get("patchesStrategicMerge", [])]:
        if "path" not in p:
            continue
        target = os.path.normpath(os.path.join(root, p["path"]))
        if not os.path.isfile(target):
            fail(f"{path}: patch {p['path']} does not exist")
        seen.add(target)
        for d in load_yaml(target):
            key = (d.get("kind"), d.get("metadata", {}).get("name"))
            if key not in resources:
                fail(f"{target}: patches {key[0]}/{key[1]}, which the bases do not define")
            check_patch_is_mergeable(target, d)
    return resources


def check_patch_is_mergeable(path, doc):
    """merge_files() does not follow the merge keys of these lists (containerPort, mountPath)."""
    for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        for field in ("ports", "volumeMounts"):
            if field in c:
                fail(f"{path}: patches {field} of container {c.get('name')}: change them in the base")


# ----- one variant (rendered or raw) -------------------------------------------------------------------

def check_variant(name, docs, configmaps, src, server, healthcheck):
    """docs: the variant's objects; configmaps: ConfigMap name -> {key: text}."""
    print(f"== {name}")
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ("StatefulSet", "Service", "PodDisruptionBudget", "ServiceMonitor"):
        if kind not in by_kind:
            fail(f"{name}: no {kind}")
    (sts,) = by_kind["StatefulSet"]
    spec = sts["spec"]
    pod = spec["template"]
    pod_labels = pod["metadata"]["labels"]
    if spec.get("replicas", 1) != 1:
        fail(f"{name}: replicas must be 1 (revkv is a single-member store)")
    if not labels_match(spec["selector"]["matchLabels"], pod_labels):
        fail(f"{name}: the StatefulSet's selector does not match its pod labels")
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    if "revkv" not in containers:
        fail(f"{name}: no container named revkv")
    c = containers["revkv"]
    args = c.get("args", [])
    flags = parse_flags(args)
    for flag in ("config", "listen", "metrics-listen", "data-dir"):
        if flag not in flags:
            fail(f"{name}: the container's args lack --{flag}")
    listen_host, grpc_port = split_address(flags["listen"])
    metrics_host, metrics_port = split_address(flags["metrics-listen"])
    for host, flag in ((listen_host, "listen"), (metrics_host, "metrics-listen")):
        if host not in ("0.0.0.0", "::"):
            fail(f"{name}: --{flag} binds {host}: probes and Services reach the pod's IP, so bind 0.0.0.0")

    # Container ports are exactly the two the flags open.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if sorted(ports.values()) != sorted([grpc_port, metrics_port]):
        fail(f"{name}: containerPorts {sorted(ports.values())} differ from the flags' ports {grpc_port}, {metrics_port}")

    def resolve(port):
        if isinstance(port, int):
            return port
        if port not in ports:
            fail(f"{name}: port name '{port}' is not a container port")
        return ports[port]

    # Probes: gRPC health on the gRPC port, or HTTP on the ops port at an ops path.
    for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c.get(probe_name)
        if probe is None:
            if probe_name == "startupProbe":
                continue
            fail(f"{name}: no {probe_name}")
        if "grpc" in probe:
            if resolve(probe["grpc"]["port"]) != grpc_port:
                fail(f"{name}: {probe_name} asks grpc.health.v1 on port {probe['grpc']['port']}, not --listen's {grpc_port}")
        elif "httpGet" in probe:
            if resolve(probe["httpGet"]["port"]) != metrics_port:
                fail(f"{name}: {probe_name} GETs port {probe['httpGet']['port']}, not --metrics-listen's {metrics_port}")
            if probe["httpGet"].get("path") != "/healthz":
                fail(f"{name}: {probe_name} GETs {probe['httpGet'].get('path')}, not /healthz")
        else:
            fail(f"{name}: {probe_name} is neither grpc nor httpGet")
        print(f"{probe_name}: {'grpc' if 'grpc' in probe else 'httpGet'} port {grpc_port if 'grpc' in probe else metrics_port}")

    # $(VAR) references in args are defined in env.
    env = {e["name"] for e in c.get("env", [])}
    for var in re.findall(r"\$\((\w+)\)", " ".join(args)):
        if var not in env:
            fail(f"{name}: args use $({var}), which env does not define")

    # Mounts: the config file comes from a ConfigMap with that key; the data directory is a claim.
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    claims = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
    config_dir, config_file = posixpath.split(flags["config"])
    if config_dir not in mounts:
        fail(f"{name}: nothing is mounted at {config_dir} (--config={flags['config']})")
    volume = volumes.get(mounts[config_dir]["name"])
    if volume is None or "configMap" not in volume:
        fail(f"{name}: {config_dir} is not a ConfigMap volume")
    cm_name = volume["configMap"]["name"]
    if cm_name not in configmaps or config_file not in configmaps[cm_name]:
        fail(f"{name}: ConfigMap {cm_name} has no key {config_file}")
    toml = configmaps[cm_name][config_file]
    data_mount = mounts.get(flags["data-dir"])
    if data_mount is None or data_mount["name"] not in claims:
        fail(f"{name}: --data-dir={flags['data-dir']} is not a mount of a volumeClaimTemplate")

    # The pod runs as the image's user.
    uid = dockerfile_uid(src)
    sc = pod["spec"].get("securityContext", {})
    if sc.get("runAsUser") != uid or sc.get("fsGroup") != uid:
        fail(f"{name}: runAsUser/fsGroup {sc.get('runAsUser')}/{sc.get('fsGroup')} differ from the image's uid {uid}")

    # Sizing: memory limit = max_heap + 128 MiB, request = limit; workers = the CPU limit.
    res = c.get("resources", {})
    limit = quantity_mib(res.get("limits", {}).get("memory", "0"))
    request = quantity_mib(res.get("requests", {}).get("memory", "0"))
    max_heap = toml_value(toml, "max_heap")
    if max_heap is None:
        fail(f"{name}: the ConfigMap's revkv.toml does not set max_heap")
    if limit != size_mib(max_heap) + NON_HEAP_MIB or request != limit:
        fail(f"{name}: memory request/limit {request:.0f}/{limit:.0f} MiB should both be max_heap ({max_heap}) + {NON_HEAP_MIB} MiB")
    workers = toml_value(toml, "workers")
    cpu = str(res.get("limits", {}).get("cpu", ""))
    if workers is None or workers != cpu.strip('"'):
        fail(f"{name}: workers = {workers} in revkv.toml, CPU limit {cpu}: keep them equal")
    print(f"resources: {request:.0f} MiB, max_heap {max_heap}, workers {workers}")

    # Services select the pod and target its ports; the headless one is the StatefulSet's.
    services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    if spec["serviceName"] not in services or services[spec["serviceName"]]["spec"].get("clusterIP") != "None":
        fail(f"{name}: serviceName {spec['serviceName']} is not a headless Service")
    for s in services.values():
        if not labels_match(s["spec"]["selector"], pod_labels):
            fail(f"{name}: Service {s['metadata']['name']} does not select the pod")
        for p in s["spec"]["ports"]:
            resolve(p.get("targetPort", p["port"]))
    replicas = spec.get("replicas", 1)
    for pdb in by_kind["PodDisruptionBudget"]:
        if not labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels):
            fail(f"{name}: PodDisruptionBudget does not select the pod")
        # A node drain must be able to evict the pod: the budget must allow at least one disruption with
        # every replica healthy (maxUnavailable: 0, or minAvailable equal to the replicas, blocks it).
        pdb_spec = pdb["spec"]
        def count(value, round_up):  # an int, or a percentage of the replicas (Kubernetes rounds up)
            text = str(value)
            if not text.endswith("%"):
                return int(text)
            return -(-int(text[:-1]) * replicas // 100) if round_up else int(text[:-1]) * replicas // 100
        if "maxUnavailable" in pdb_spec:
            allowed = count(pdb_spec["maxUnavailable"], round_up=True)
        else:
            allowed = replicas - count(pdb_spec.get("minAvailable", 0), round_up=True)
        if allowed < 1:
            fail(f"{name}: PodDisruptionBudget allows no disruption with {replicas} replica(s): a node drain would "
                 "block for good")
        print(f"PodDisruptionBudget: {allowed} disruption(s) allowed, a drain can proceed")

    # /metrics has a Service of its own, whose only port is the metrics port: clients' Service has no
    # metrics port, and the metrics one no client port.
    metrics_services = [s for s in services.values()
                        if s["spec"].get("clusterIP") != "None"
                        and all(resolve(p.get("targetPort", p["port"])) == metrics_port for p in s["spec"]["ports"])]
    if len(metrics_services) != 1:
        fail(f"{name}: {len(metrics_services)} Services serve only the metrics port, expected 1")
    for s in services.values():
        if s is metrics_services[0]:
            continue
        if any(resolve(p.get("targetPort", p["port"])) == metrics_port for p in s["spec"]["ports"]):
            fail(f"{name}: Service {s['metadata']['name']} exposes the metrics port beside client ports")

    # The ServiceMonitor scrapes /metrics on the metrics port of exactly one Service.
    for sm in by_kind["ServiceMonitor"]:
        selected = [s for s in services.values()
                    if labels_match(sm["spec"]["selector"]["matchLabels"], s["metadata"].get("labels", {}))]
        if len(selected) != 1:
            fail(f"{name}: ServiceMonitor selects {len(selected)} Services, expected 1")
        service_ports = {p["name"]: p for p in selected[0]["spec"]["ports"]}
        for ep in sm["spec"]["endpoints"]:
            if ep["port"] not in service_ports:
                fail(f"{name}: ServiceMonitor port {ep['port']} is not a port of Service {selected[0]['metadata']['name']}")
            target = service_ports[ep["port"]].get("targetPort", service_ports[ep["port"]]["port"])
            if resolve(target) != metrics_port or ep.get("path", "/metrics") != "/metrics":
                fail(f"{name}: ServiceMonitor does not scrape /metrics on --metrics-listen's port {metrics_port}")

    # The server accepts the ConfigMap's file and the args, and serves.
    scratch = tempfile.mkdtemp(prefix="revkv-k8s-config.")
    try:
        config = os.path.join(scratch, config_file)
        with open(config, "w") as f:
            f.write(toml)
        real_args = [a.replace(flags["config"], config) for a in args]
        real_args = [re.sub(r"\$\(POD_NAME\)", "revkv-0", a) for a in real_args]
        with RunningServer(server, real_args, healthcheck=healthcheck):
            print(f"revkv-server starts with {config_file} and the args, and is SERVING")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def merge(base, patch):
    """Strategic merge, simplified: maps merge key by key; lists of maps that all have a name merge item
    by item by name; any other value (scalars, other lists) is replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    named = lambda xs: isinstance(xs, list) and xs and all(isinstance(x, dict) and "name" in x for x in xs)
    if named(base) and named(patch):
        out = list(base)
        for item in patch:
            i = next((i for i, b in enumerate(out) if b["name"] == item["name"]), None)
            if i is None:
                out.append(item)
            else:
                out[i] = merge(out[i], item)
        return out
    return patch


def merge_files(directory):
    """(objects, ConfigMap name -> {key: text}) of a kustomization, merged from its files."""
    k = load_yaml(os.path.join(directory, "kustomization.yaml"))[0]
    docs, configmaps = [], {}
    for r in k.get("resources", []):
        target = os.path.join(directory, r)
        if os.path.isdir(target):
            d, c = merge_files(target)
            docs += d
            configmaps.update(c)
        else:
            docs += load_yaml(target)
    for g in k.get("configMapGenerator", []):
        data = {os.path.basename(f): open(os.path.join(directory, f)).read() for f in g.get("files", [])}
        if g.get("behavior") == "merge":
            data = {**configmaps.get(g["name"], {}), **data}
        configmaps[g["name"]] = data
    for p in k.get("patches", []):
        for patch in load_yaml(os.path.join(directory, p["path"])):
            key = (patch["kind"], patch["metadata"]["name"])
            docs = [merge(d, patch) if (d["kind"], d["metadata"]["name"]) == key else d for d in docs]
    return docs, configmaps


def rendered(directory):
    out = subprocess.run(["kubectl", "kustomize", directory], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"kubectl kustomize {directory}: {out.stderr}")
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    return [d for d in docs if d["kind"] != "ConfigMap"], configmaps


def check():
    src, server, healthcheck = sys.argv[1:4]
    root = os.path.join(src, "deploy/kubernetes")
    files = sorted(glob.glob(os.path.join(root, "**/*.yaml"), recursive=True))
    for f in files:
        load_yaml(f)
    print(f"{len(files)} YAML files parse")
    kustomizations = sorted(glob.glob(os.path.join(root, "**/kustomization.yaml"), recursive=True))
    seen = set()
    for k in kustomizations:
        check_kustomization(k, seen)
    unused = set(map(os.path.normpath, files)) - seen - set(map(os.path.normpath, kustomizations))
    if unused:
        fail(f"files no kustomization uses: {sorted(unused)}")

    for k in kustomizations:
        d = os.path.dirname(k)
        docs, configmaps = merge_files(d)
        check_variant(f"{os.path.relpath(d, root)} (merged from files)", docs, configmaps, src, server, healthcheck)
        if shutil.which("kubectl"):
            docs, configmaps = rendered(d)
            check_variant(f"{os.path.relpath(d, root)} (kubectl kustomize)", docs, configmaps, src, server, healthcheck)
    if not shutil.which("kubectl"):
        print("kubectl is not installed: checked the kustomizations as merged from their files only")


if __name__ == "__main__":
    main(check)
