#!/usr/bin/env python3
"""revkv-bench-gc's heaps, black-box: the incremental Boehm heap really runs incremental collections, the
-matched heaps get the free-space divisor that matches revkv's major trigger, a Boehm node is counted at
the 48 bytes it occupies, revkv's peak heap counts its retained pages, and an unknown heap name is
rejected with a clear error before anything runs.

Usage: heaps_test.py <revkv-bench-gc binary>"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = sys.argv.pop(1)


def run(*args):
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=300)


def quick(*args):
    """A --quick run; returns its results by variant."""
    path = os.path.join(tempfile.mkdtemp(prefix="revkv-bench-gc-test."), "out.json")
    done = run("--quick", "--json-file", path, *args)
    if done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}: {done.stderr[-3000:]}")
    with open(path) as f:
        return {r["variant"]: r for r in json.load(f)["results"]}


class HeapsTest(unittest.TestCase):
    def test_incremental_heap_runs_incremental_collections(self):
        r = quick("--heaps", "boehm-incremental,boehm-default")
        inc, full = r["boehm-incremental"], r["boehm-default"]
        self.assertTrue(inc["incremental"])
        self.assertFalse(full["incremental"])
        self.assertTrue(inc["verified"])
        # The forced collections are the only ones with START..END; the collector completed more
        # (its own incremental ones), and each of them stopped the world at least once.
        self.assertGreater(inc["collections"]["completed"], inc["collections"]["full"])
        self.assertGreater(inc["stream"]["pauses"]["world_stops"]["count"], 0)
        self.assertEqual(inc["stream"]["pauses"]["full"]["count"], 0)
        # Their stops are time outside allocation.
        self.assertLess(inc["stream"]["ns_per_alloc_outside_pauses"], inc["stream"]["ns_per_alloc"])
        # Stop-the-world mode: every collection is a full one.
        self.assertEqual(full["collections"]["completed"], full["collections"]["full"])

    def test_matched_heaps_get_the_divisor_of_revkvs_trigger(self):
        r = quick("--heaps", "boehm-default,boehm-default-matched,boehm-incremental-matched")
        self.assertEqual(r["boehm-default"]["free_space_divisor"], 3)
        self.assertEqual(r["boehm-default-matched"]["free_space_divisor"], 2)
        self.assertEqual(r["boehm-incremental-matched"]["free_space_divisor"], 1)
        self.assertTrue(r["boehm-incremental-matched"]["incremental"])

    def test_explicit_divisor_names_the_heap(self):
        r = quick("--boehm-free-space-divisor", "5", "--heaps", "boehm-1-marker")
        self.assertEqual(r["boehm-1-marker-d5"]["free_space_divisor"], 5)
        self.assertEqual(r["boehm-1-marker-d5"]["markers"], 1)

    def test_boehm_node_counts_the_bytes_it_occupies(self):
        for basis in ("nodes", "bytes"):
            r = quick("--live-basis", basis, "--heaps", "revkv,boehm-default")
            self.assertEqual(r["boehm-default"]["requested_node_bytes"], 32)
            self.assertEqual(r["boehm-default"]["node_bytes"], 48)
            self.assertEqual(r["revkv"]["node_bytes"], 48)
            # Same node size, so both bases give both heaps the same tree.
            self.assertEqual(r["boehm-default"]["live_nodes"], r["revkv"]["live_nodes"], basis)
            self.assertEqual(r["boehm-default"]["tree_bytes"], r["revkv"]["tree_bytes"], basis)

    def test_revkv_peak_heap_counts_retained_pages(self):
        # Compacting collections with the evacuation reserve: whole pages empty, and the page space
        # keeps them mapped for the next evacuation.
        r = quick("--live", "32", "--heaps", "revkv", "--revkv-compact", "--revkv-evacuation-reserve")["revkv"]
        self.assertGreater(r["retained_bytes"], 0)
        self.assertGreaterEqual(r["peak_heap_bytes"], r["committed_bytes"] + r["retained_bytes"])

    def test_unknown_heap_is_rejected_before_anything_runs(self):
        for name in ("boehm-bogus", "boehm-0-marker", "boehm-incremental-x-marker", "boehm", "revkv-matched",
                     "boehm-default-incremental"):
            done = run("--quick", "--heaps", "revkv," + name)
            self.assertEqual(done.returncode, 2, name)
            self.assertIn(f"unknown heap '{name}'", done.stderr)
            self.assertNotIn("run 1", done.stderr, name)  # no configuration ran
            self.assertEqual(done.stdout, "", name)


if __name__ == "__main__":
    unittest.main()
