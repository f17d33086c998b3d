"""tests/e2e/run.py: find and run the end-to-end tests.

    run.py [--corral PATH] [--progs DIR] [--policy-dir DIR] [--marker M]
           [--root-only] [-k SUBSTRING] [--files P,...] [--shard I/N] [--list]

Locations default to the environment (CORRAL_BIN, CORRAL_PROGS,
CORRAL_POLICY_DIR, CORRAL_TEST_MARKER) and then to ./build. Prints one
"PASS: e2e/NAME" or "FAIL: e2e/NAME: why" line per test; exits 1 when any
failed and 2 when none ran. tests/run.sh is the usual way in.
"""

import argparse
import importlib
import os
import secrets
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # leave no __pycache__ in the checkout

import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", default=os.environ.get("CORRAL_BIN"))
    ap.add_argument("--progs", default=os.environ.get("CORRAL_PROGS"))
    ap.add_argument("--corral-bypass",
                    default=os.environ.get("CORRAL_BYPASS_BIN"),
                    help="the test-only build whose opens bypass the "
                    "resolver (make bypass)")
    ap.add_argument("--policy-dir",
                    default=os.environ.get("CORRAL_POLICY_DIR"))
    ap.add_argument("--marker", default=os.environ.get("CORRAL_TEST_MARKER"))
    ap.add_argument("--root-only", action="store_true",
                    help="run the tests that need root (and only those)")
    ap.add_argument("-k", dest="pattern", default=None,
                    help="run only tests whose name contains this")
    ap.add_argument("--files", default=None,
                    help="only the tests of these files: comma-separated "
                    "name prefixes after test_ (e.g. d0,d3)")
    ap.add_argument("--shard", default=None,
                    help="I/N: only every Nth selected test from the Ith "
                    "(0-based), so N runners, each its own uid, share the "
                    "machine")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()

    repo = os.path.dirname(os.path.dirname(HERE))
    cfg = harness.CFG
    cfg.corral = os.path.abspath(a.corral or os.path.join(
        repo, "build", "corral"))
    cfg.progs = os.path.abspath(a.progs or os.path.join(
        repo, "build", "tests", "progs"))
    cfg.corral_bypass = os.path.abspath(a.corral_bypass or os.path.join(
        repo, "build", "bypass", "corral"))
    pd = a.policy_dir or os.path.join(repo, "policy")
    cfg.policy_dir = os.path.abspath(pd)
    cfg.marker = a.marker or "crsuite" + secrets.token_hex(8)
    cfg.tmpdir = os.path.abspath(os.environ.get("TMPDIR") or
                                 tempfile.gettempdir())

    prefixes = a.files.split(",") if a.files else None
    for f in sorted(os.listdir(HERE)):
        if f.startswith("test_") and f.endswith(".py"):
            if prefixes and not any(f.startswith("test_" + p)
                                    for p in prefixes):
                continue
            importlib.import_module(f[:-3])

    # A file may import another's helpers, which registers that file's
    # tests too: --files keeps only the tests its own files define.
    # The Landlock-off pass leaves out tests that are the supervisor's
    # alone (harness.test's supervisor_only).
    def chosen(fn):
        if prefixes and not any(fn.__module__.startswith("test_" + p)
                                for p in prefixes):
            return False
        return not (harness.landlock_pass() == "off" and
                    fn.corral_supervisor_only)

    tests = [(n, fn) for n, fn, root in harness.registry()
             if root == a.root_only and (not a.pattern or a.pattern in n)
             and chosen(fn)]
    names = [n for n, _ in tests]
    if a.shard:
        i, n = (int(x) for x in a.shard.split("/"))
        if not 0 <= i < n:
            print("e2e: bad --shard %s" % a.shard, file=sys.stderr)
            return 2
        tests = tests[i::n]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        print("FAIL: e2e/registry: duplicate test names %s" % sorted(dups),
              flush=True)
        return 1
    if a.list:
        print("\n".join(names))
        return 0
    if not tests:
        print("e2e: no test selected", file=sys.stderr)
        return 2

    failed = 0
    for name, fn in tests:
        if not harness.run_test(name, fn):
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
