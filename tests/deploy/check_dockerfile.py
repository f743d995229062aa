#!/usr/bin/env python3
"""deploy_container: checks deploy/container/Dockerfile without a container engine.

- every base image is Debian bookworm;
- every file COPY takes from the context exists in the repository and is not excluded by
  Dockerfile.dockerignore; every file COPY --from=<stage> takes is produced by that stage's commands,
  which this test replays against the build tree (`cmake --install` into a scratch DESTDIR);
- every package a stage installs exists in Debian (apt-cache show), and the runtime stage installs
  exactly the packages dpkg-shlibdeps derives from the binaries it copies;
- every command a RUN line executes exists, and comes from a package the stage installs or from one
  that every Debian image has (Essential or Priority: required), or from a file the stage copied in;
- the build stage's cmake targets exist and are built in the build tree;
- USER, VOLUME, EXPOSE, HEALTHCHECK, ENTRYPOINT and CMD agree with each other and with the server's flags;
  then the copied revkv-server really starts with the image's ENTRYPOINT + CMD (ports and data directory
  overridden) and the copied revkv-healthcheck, run as HEALTHCHECK runs it, says SERVING.

    check_dockerfile.py <source dir> <build dir>
"""
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from deploytest import RunningServer, fail, main, parse_flags, split_address

SHELL_SEPARATORS = re.compile(r"&&|\|\||;|\|")


def parse_dockerfile(path):
    """[(instruction, argument text)] with continuation lines joined and comments dropped."""
    instructions, current = [], ""
    for line in open(path):
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        instructions.append((word.upper(), rest.strip()))
        current = ""
    return instructions


def exec_form(text):
    """A JSON array (exec form) or a shell-form string split as the shell would."""
    text = text.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            fail(f"not a valid exec-form array: {text}: {e}")
    return shlex.split(text)


def dockerignore_patterns(path):
    if not os.path.exists(path):
        return []
    return [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]


def ignored(relpath, patterns):
    parts = relpath.split("/")
    for p in patterns:
        p = p.rstrip("/")
        if p.startswith("**/"):
            if any(fnmatch.fnmatch(part, p[3:]) for part in parts):
                return True
        elif fnmatch.fnmatch(relpath, p) or any(fnmatch.fnmatch("/".join(parts[:i]), p) for i in range(1, len(parts))):
            return True
    return False


def setup_build_packages(src):
    """The build_packages array of scripts/setup."""
    text = open(os.path.join(src, "scripts/setup")).read()
    m = re.search(r"build_packages=\((.*?)\n\)", text, re.S)
    if not m:
        fail("scripts/setup has no build_packages=( ... ) array")
    return [w for line in m.group(1).splitlines() for w in line.split("#")[0].split()]


def apt_install_packages(command):
    words = shlex.split(command)
    if "install" not in words:
        return []
    return [w for w in words[words.index("install") + 1:] if not w.startswith("-")]


def check_packages_exist(names, what):
    """Fails naming every one of `names` that apt-cache does not know. One call for all of them (each
    call reads the whole package cache, about a second); its status is 0 when any one is found, so the
    Package: fields of its output say which were."""
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", *sorted(set(names))], capture_output=True,
                         text=True)
    found = set(re.findall(r"^Package: (\S+)$", out.stdout, re.M))
    missing = sorted(set(names) - found)
    if missing:
        fail(f"{what} {' '.join(missing)}: no such Debian package (apt-cache show)")


def package_of(path):
    """The Debian package that installed `path` (resolving symlinks, and /usr-merge aliases), or None."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
            if p.startswith(a):
                candidates.append(b + p[len(a):])
            elif p.startswith(b):
                candidates.append(a + p[len(b):])
    for p in candidates:
        out = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0].split(",")[0].strip()
    return None


def in_every_image(package):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", package], capture_output=True, text=True)
    return out.returncode == 0 and (out.stdout.startswith("yes") or out.stdout.endswith("required"))


def shlibdeps(binaries):
    scratch = tempfile.mkdtemp(prefix="revkv-shlibdeps.")
    try:
        os.makedirs(os.path.join(scratch, "debian"))
        with open(os.path.join(scratch, "debian/control"), "w") as f:
            f.write("Source: revkv\n\nPackage: revkv\nArchitecture: any\n")
        out = subprocess.run(["dpkg-shlibdeps", "-O", *binaries], cwd=scratch, capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"dpkg-shlibdeps: {out.stderr}")
        deps = out.stdout.strip().split("=", 1)[1]
        names = {d.split("|")[0].split("(")[0].strip() for d in deps.split(",")}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # A shlibs file may name a virtual package (libspdlog1.10-fmt9, provided by libspdlog1.10); an image
    # installs the real one, so compare with the installed package that provides it.
    providers = {}
    listing = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Provides}\n"], capture_output=True, text=True)
    for line in listing.stdout.splitlines():
        package, _, provides = line.partition(" ")
        for p in provides.split(","):
            if p.strip():
                providers.setdefault(p.split("(")[0].strip(), package)
    return {n if n not in providers or package_installed(n) else providers[n] for n in names}


def package_installed(name):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
    return out.returncode == 0 and out.stdout == "install ok installed"


class Stage:
    def __init__(self, name, image):
        self.name, self.image = name, image
        self.packages = set()
        self.files = {}  # path in the image -> path on this machine (file or directory)

    def resolve(self, path):
        """The path on this machine that `path` in this stage's filesystem corresponds to, or None."""
        for prefix in sorted(self.files, key=len, reverse=True):
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return self.files[prefix] + path[len(prefix.rstrip("/")):] if path != prefix else self.files[prefix]
        return None


def check():
    src, build = sys.argv[1:3]
    dockerfile = os.path.join(src, "deploy/container/Dockerfile")
    patterns = dockerignore_patterns(dockerfile + ".dockerignore")
    scratch = tempfile.mkdtemp(prefix="revkv-dockerfile.")
    try:
        run_checks(src, build, dockerfile, patterns, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_checks(src, build, dockerfile, patterns, scratch):
    stages, stage = {}, None
    setup_packages = setup_build_packages(src)
    config = {}  # USER, VOLUME, EXPOSE, HEALTHCHECK, ENTRYPOINT, CMD of the last stage
    for instruction, arg in parse_dockerfile(dockerfile):
        if instruction == "FROM":
            words = arg.split()
            image = words[0]
            if not re.fullmatch(r"debian:bookworm(-slim)?", image):
                fail(f"FROM {image}: the image must be Debian bookworm")
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stage = stages[name] = Stage(name, image)
            config = {}
            print(f"stage {name}: {image}")
        elif instruction == "COPY":
            words = shlex.split(arg)
            options = [w for w in words if w.startswith("--")]
            paths = [w for w in words if not w.startswith("--")]
            sources, dest = paths[:-1], paths[-1]
            origin = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")), None)
            for source in sources:
                if origin is None:
                    rel = os.path.normpath(source)
                    local = os.path.normpath(os.path.join(src, rel))
                    if not os.path.exists(local):
                        fail(f"COPY {source}: no such file in the repository")
                    if rel != "." and ignored(rel, patterns):
                        fail(f"COPY {source}: excluded by Dockerfile.dockerignore")
                else:
                    if origin not in stages:
                        fail(f"COPY --from={origin}: no such stage")
                    local = stages[origin].resolve(source)
                    if local is None or not os.path.exists(local):
                        fail(f"COPY --from={origin} {source}: stage {origin} does not produce it")
                target = dest if not dest.endswith("/") else dest + os.path.basename(source.rstrip("/"))
                if source in (".", "./"):
                    target = dest
                stage.files[target] = local
                print(f"COPY {source} -> {target}: ok")
        elif instruction == "RUN":
            check_run(arg, stage, stages, src, build, setup_packages, scratch)
        elif instruction in ("USER", "VOLUME", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD", "WORKDIR", "STOPSIGNAL"):
            config[instruction] = arg
        elif instruction not in ("ENV", "ARG", "LABEL"):
            fail(f"unexpected instruction {instruction}")
    check_runtime(stage, config, src)


def check_run(arg, stage, stages, src, build, setup_packages, scratch):
    for command in SHELL_SEPARATORS.split(arg):
        words = shlex.split(command)
        env = {}
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            k, v = words.pop(0).split("=", 1)
            env[k] = v
        if not words:
            continue
        tool = words[0]
        if tool.startswith("/"):
            local = stage.resolve(tool)
            if local is None or not os.access(local, os.X_OK):
                fail(f"RUN {tool}: not a file this stage copied in, or not executable")
            if os.path.relpath(local, src) == "scripts/setup":
                if words[1:] != ["--build"]:
                    fail("RUN scripts/setup: use --build (the image needs only the build packages)")
                stage.packages |= set(setup_packages)
                check_packages_exist(setup_packages, "scripts/setup --build installs")
            print(f"RUN {tool}: copied from the repository")
            continue
        path = shutil.which(tool)
        if path is None:
            fail(f"RUN {tool}: no such command")
        package = package_of(path)
        if package is None:
            fail(f"RUN {tool}: {path} belongs to no Debian package")
        if package not in stage.packages and not in_every_image(package):
            fail(f"RUN {tool}: comes from {package}, which stage {stage.name} does not install")
        if tool == "apt-get" and "install" in words:
            check_packages_exist(apt_install_packages(command), "apt-get install")
            stage.packages |= set(apt_install_packages(command))
        if tool == "cmake":
            replay_cmake(words, env, stage, src, build, scratch)
        print(f"RUN {tool}: from {package}")


def known_targets(build):
    """The executables tests/deploy/CMakeLists.txt found: name -> file (deploy_targets.txt, name=path)."""
    listing = os.path.join(build, "tests/deploy/deploy_targets.txt")
    if not os.path.exists(listing):
        fail(f"{listing} is missing: configure the project with tests/deploy")
    targets = {}
    for line in open(listing):
        name, _, path = line.strip().partition("=")
        targets[name] = path
    return targets


def replay_cmake(words, env, stage, src, build, scratch):
    """Maps the build stage's cmake calls onto the build tree: -S must be the sources, -B the build tree,
    --build targets must exist, and --install is replayed into a scratch DESTDIR."""
    flags = dict(zip(words, words[1:]))
    if "-S" in flags:
        if stage.resolve(flags["-S"]) != src or not os.path.exists(os.path.join(src, "CMakeLists.txt")):
            fail(f"cmake -S {flags['-S']}: not the repository's sources")
        stage.files[flags["-B"]] = build
    elif "--build" in words:
        if stage.resolve(flags["--build"]) != build:
            fail(f"cmake --build {flags['--build']}: not the build tree")
        targets = words[words.index("--target") + 1:] if "--target" in words else []
        known = known_targets(build)
        for t in targets:
            if t not in known:
                fail(f"cmake --build --target {t}: no such target (known: {sorted(known)})")
            if not os.path.exists(known[t]):
                fail(f"cmake --build --target {t}: {known[t]} is not built: build the project first")
    elif "--install" in words:
        if stage.resolve(flags["--install"]) != build:
            fail(f"cmake --install {flags['--install']}: not the build tree")
        destdir = os.path.join(scratch, "destdir")
        args = [w for w in words[words.index("--install") + 2:]]
        out = subprocess.run(["cmake", "--install", build, *args], env={**os.environ, "DESTDIR": destdir},
                             capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"cmake --install {' '.join(args)} (replayed): {out.stderr}")
        stage.files[env.get("DESTDIR", "/")] = destdir


def check_runtime(stage, config, src):
    for instruction in ("USER", "VOLUME", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD"):
        if instruction not in config:
            fail(f"the runtime stage has no {instruction}")
    entrypoint = exec_form(config["ENTRYPOINT"])
    args = exec_form(config["CMD"])
    flags = parse_flags(args)
    server = stage.resolve(entrypoint[0])
    if server is None or not os.access(server, os.X_OK):
        fail(f"ENTRYPOINT {entrypoint[0]} is not a binary the image copied in")
    for flag in ("config", "listen", "metrics-listen", "data-dir"):
        if flag not in flags:
            fail(f"CMD lacks --{flag}")
    listen_host, grpc_port = split_address(flags["listen"])
    metrics_host, metrics_port = split_address(flags["metrics-listen"])
    if listen_host != "0.0.0.0" or metrics_host != "0.0.0.0":
        fail("CMD must bind 0.0.0.0 in the container (--listen, --metrics-listen)")
    exposed = sorted(int(p.split("/")[0]) for p in config["EXPOSE"].split())
    if exposed != sorted([grpc_port, metrics_port]):
        fail(f"EXPOSE {exposed} differs from the flags' ports {grpc_port}, {metrics_port}")
    volume = exec_form(config["VOLUME"])
    if volume != [flags["data-dir"]]:
        fail(f"VOLUME {volume} is not --data-dir={flags['data-dir']}")
    config_file = stage.resolve(flags["config"])
    if config_file is None or not os.path.isfile(config_file):
        fail(f"--config={flags['config']} is not a file the image copied in")

    user = config["USER"].split(":")[0]
    if not user.isdigit() or int(user) == 0:
        fail(f"USER {config['USER']}: use a numeric non-root uid (Kubernetes runAsNonRoot checks it)")
    dockerfile_text = open(os.path.join(src, "deploy/container/Dockerfile")).read()
    if not re.search(rf"useradd[^\n]*--uid {user}\b", dockerfile_text.replace("\\\n", " ")):
        fail(f"USER {user} is not the uid the image's useradd creates")

    # The runtime stage installs exactly the shared libraries its binaries need.
    binaries = [path for dest, path in stage.files.items() if dest.startswith("/usr/bin/")]
    needed = shlibdeps(binaries)
    if needed != stage.packages:
        fail(f"runtime packages {sorted(stage.packages)} differ from what dpkg-shlibdeps derives: {sorted(needed)}")
    print(f"runtime packages = dpkg-shlibdeps of {[os.path.basename(b) for b in binaries]}: ok")

    # HEALTHCHECK runs a copied binary against the gRPC port.
    hc = config["HEALTHCHECK"]
    if " CMD " not in f" {hc} ":
        fail("HEALTHCHECK has no CMD")
    hc_argv = exec_form(hc.split("CMD", 1)[1])
    probe = stage.resolve(hc_argv[0])
    if probe is None or not os.access(probe, os.X_OK):
        fail(f"HEALTHCHECK runs {hc_argv[0]}, which the image does not copy in")
    hc_flags = parse_flags(hc_argv[1:])
    if split_address(hc_flags.get("endpoint", "127.0.0.1:2379"))[1] != grpc_port:
        fail(f"HEALTHCHECK asks port {hc_flags.get('endpoint')}, not --listen's {grpc_port}")

    real_args = [a.replace(flags["config"], config_file) for a in args]
    with RunningServer(server, real_args) as s:
        argv = [probe] + [a if a != hc_flags.get("endpoint") else f"127.0.0.1:{s.grpc_port}" for a in hc_argv[1:]]
        if "endpoint" not in hc_flags:
            argv += ["--endpoint", f"127.0.0.1:{s.grpc_port}"]
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"HEALTHCHECK's command fails against a running server: {out.stdout}{out.stderr}")
    print("ENTRYPOINT + CMD start the server; HEALTHCHECK's command says SERVING")


if __name__ == "__main__":
    main(check)
