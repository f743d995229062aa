"""Helpers for the deploy tests written in Python: failing with a message, and running a revkv-server
on free loopback ports with a scratch data directory (stopped, and checked to exit 0, on the way out).

    with RunningServer(binary, ["--config=/x.toml"], healthcheck=probe) as server:
        metrics = server.get("/metrics")
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


class TestFailure(Exception):
    pass


def fail(message):
    raise TestFailure(message)


def main(check):
    """Runs check(); prints PASS, or FAIL with the message, and exits accordingly."""
    try:
        check()
    except TestFailure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("PASS")


def need_tool(name, package):
    """The path of the command `name`, or None when it is not installed (the caller then leaves out what
    needs it). With REVKV_REQUIRE_TOOLS=1 in the environment (.ci/run sets it) a missing tool fails the
    test instead: the C++ tests' REVKV_NEED_TOOL (tests/support/external_tools.h) and lib.sh's
    need_tool follow the same rule."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("REVKV_REQUIRE_TOOLS") == "1":
            fail(f"{name} is not installed (Debian package {package}; scripts/setup installs it) and "
                 "REVKV_REQUIRE_TOOLS=1 makes a missing tool a failure")
        print(f"{name} is not installed (Debian package {package}): skipping what needs it")
    return path


def parse_flags(args):
    """--name=value and --name value pairs as a dict (the last one wins, as in revkv-server)."""
    flags = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            name, value = a[2:].split("=", 1)
            flags[name] = value
        elif a.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            flags[a[2:]] = args[i + 1]
            i += 1
        elif a.startswith("--"):
            flags[a[2:]] = "true"
        i += 1
    return flags


def split_address(address):
    """'host:port' -> (host, port as int); fails on anything else."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        fail(f"'{address}' is not host:port")
    return host.strip("[]"), int(port)


def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class RunningServer:
    """revkv-server started with `args` plus --data-dir, --listen and --metrics-listen overrides (flags
    given later win), waited for until /healthz answers and, if `healthcheck` names revkv-healthcheck,
    until grpc.health.v1 answers SERVING."""

    def __init__(self, binary, args, healthcheck=None):
        if not os.access(binary, os.X_OK):
            fail(f"{binary} is missing: build the project first")
        self.binary, self.args, self.healthcheck = binary, list(args), healthcheck
        self.scratch = tempfile.mkdtemp(prefix="revkv-deploy-test.")
        self.process = None
        self.log_path = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self._cleanup()
            raise
        return self

    def _start(self):
        for attempt in range(3):
            self.grpc_port, self.ops_port = _free_ports(2)
            self.log_path = os.path.join(self.scratch, f"server.{attempt}.log")
            argv = [self.binary, *self.args, f"--data-dir={self.scratch}/data.{attempt}",
                    f"--listen=127.0.0.1:{self.grpc_port}", f"--metrics-listen=127.0.0.1:{self.ops_port}"]
            with open(self.log_path, "wb") as log:
                self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_healthy():
                break
            text = self.log().lower()
            if "address in use" not in text and "already in use" not in text:
                fail(f"the server did not start: {' '.join(argv)}\n--- log ---\n{self.log()[-3000:]}")
        else:
            fail("no free ports after 3 attempts")
        if self.healthcheck:
            probe = subprocess.run([self.healthcheck, "--endpoint", f"127.0.0.1:{self.grpc_port}", "--timeout", "5"],
                                   capture_output=True, text=True)
            if probe.returncode != 0:
                fail(f"grpc.health.v1 is not SERVING: {probe.stdout}{probe.stderr}")

    def _wait_healthy(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if self.get("/healthz") == "ok\n":
                    return True
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        self.process.kill()
        self.process.wait()
        fail(f"the server did not answer /healthz within 10 s\n--- log ---\n{self.log()[-3000:]}")

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}{path}", timeout=5) as r:
            return r.read().decode()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    status = self.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
                    if exc_type is None:
                        fail("the server did not exit within 15 s of SIGTERM")
                    return False
                if status != 0 and exc_type is None:
                    fail(f"the server exited with status {status} after SIGTERM\n{self.log()[-3000:]}")
        finally:
            self._cleanup()
        return False

    def _cleanup(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)
