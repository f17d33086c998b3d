#!/bin/sh
# make demo: one sandboxed run shown end to end: what the program sees, and
# the result object corral returns.
set -eu
build=${1:-build}
corral="$build/corral"
echo "== corral probe"
"$corral" probe || true
echo
echo "== corral run --json -- sh -c '...'   (a scrubbed, supervised run)"
DEMO_SECRET_TOKEN=hunter2 "$corral" run --json --limit wall=10s -- sh -c '
	grep -E "^(NoNewPrivs|Seccomp|CapEff|TracerPid)" /proc/self/status;
	cat /etc/shadow || echo "(the host'\''s /etc/shadow is outside every root)";
	echo hello > note.txt && cat note.txt;
	echo "environment: $(env | cut -d= -f1 | sort | tr "\n" " ")";
	(sleep 1000 &) ; echo "left a background sleep behind"' |
	python3 -m json.tool
echo
echo "== a wall-time limit: sleep 1000 under --limit wall=1s"
"$corral" run --json --limit wall=1s -- sleep 1000 | python3 -m json.tool || true
