"""Many runs in a row leave nothing behind."""

import os

from harness import eq, test, workspaces, open_fd_count, CFG


@test
def stress_200_runs(t):
    fds = open_fd_count()
    ws = workspaces()
    for i in range(200):
        run = t.corral(["run", "--json", "--", "true"], timeout=60)
        r = t.result(run)
        eq((run.code, r.get("status")), (0, "ok"), "run %d" % i)
    eq(open_fd_count(), fds, "open descriptors of the test process")
    eq(sorted(workspaces() - ws), [], "workspaces left in %s" % CFG.tmpdir)
    # Running or unreaped, a child of the test would be listed here.
    kids = open("/proc/self/task/%d/children" % os.getpid()).read().split()
    eq(kids, [], "children of the test process")
