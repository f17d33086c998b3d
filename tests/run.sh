#!/bin/sh
# tests/run.sh BUILDDIR: run every test tier and judge the whole.
#
#   1. unit:  BUILDDIR/tests/unit/run-unit
#   2. e2e:   tests/e2e/run.py, every corral invocation under tests/progs/nons
#             (no namespace can be made), from a staging directory. As root
#             the root-only tests run first, then the suite runs with no
#             capability at all in two runners at once, as uid 65534 and as
#             daemon, each half the tests; otherwise as the current user.
#             The attack suites run again with Landlock off.
#   3. hygiene: no corral-* workspace left in the tests' TMPDIR, no process
#             left carrying this run's marker.
#
# Every "PASS: " and "FAIL: " line counts; the FAIL lines are repeated at the
# end, then exactly one "N passed, N failed" line. Exit status is non-zero
# when anything failed or when no test ran. There is no skip: a test that
# cannot run fails.
set -u

BUILD=${1:-build}
case $BUILD in
/*) ;;
*) BUILD=$(pwd)/$BUILD ;;
esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
# Generous: the e2e tier takes well under a minute here, a few under ASan.
E2E_TIMEOUT=${CORRAL_E2E_TIMEOUT:-2400}
SAFE_PATH=/usr/bin:/bin
NOBODY=65534

# Unique to this run: per-test markers extend it, so any process it finds
# later was started by this run.
marker=crsuite$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

# Outside any checkout, and traversable by the unprivileged uid even when
# the checkout is not (CI's clone may sit under /root).
stage=$(mktemp -d /tmp/crstage.XXXXXX) || exit 1
chmod 0755 "$stage"
log=$stage/log
: >"$log"

cleanup() {
	chmod -R u+rwX "$stage" 2>/dev/null
	rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# tier NAME CMD...: run CMD, show its output as it comes, keep it for the
# count. A tier that exits non-zero without saying FAIL, or says nothing
# countable, is itself a failure.
tier() {
	name=$1
	shift
	out=$stage/$name.out
	{
		"$@" 2>&1
		echo $? >"$stage/$name.rc"
	} | tee "$out"
	rc=$(cat "$stage/$name.rc" 2>/dev/null || echo 255)
	n=$(grep -c -e '^PASS: ' -e '^FAIL: ' "$out")
	if [ "$n" -eq 0 ] && [ -n "${CORRAL_E2E_K:-}" ] && [ "$rc" -ne 1 ]; then
		echo "note: $name: no test matches '$CORRAL_E2E_K'"
	elif [ "$n" -eq 0 ]; then
		echo "FAIL: $name: ran no test (exit status $rc)" | tee -a "$out"
	elif [ "$rc" -ne 0 ] && ! grep -q '^FAIL: ' "$out"; then
		echo "FAIL: $name: exited $rc without naming a failure" |
			tee -a "$out"
	fi
	grep -e '^PASS: ' -e '^FAIL: ' "$out" >>"$log"
}

# ---- unit tier ----
if [ -x "$BUILD/tests/unit/run-unit" ]; then
	tier unit "$BUILD/tests/unit/run-unit"
else
	echo "FAIL: unit: $BUILD/tests/unit/run-unit is missing" | tee -a "$log"
fi

# ---- the seccomp programs compiled into corral ----
# A fresh generation with this build's sources and libseccomp must give the
# very programs corral carries (build/tracer/filter_prebuilt.c).
prebuilt() {
	if [ ! -x "$BUILD/filtergen" ] || [ ! -e "$BUILD/tracer/filter_prebuilt.c" ]; then
		echo "FAIL: prebuilt filter: $BUILD/filtergen or its output is missing"
	elif "$BUILD/filtergen" >"$stage/filter_prebuilt.c" &&
		cmp -s "$stage/filter_prebuilt.c" "$BUILD/tracer/filter_prebuilt.c"; then
		echo "PASS: prebuilt filter: the compiled-in programs equal a fresh generation"
	else
		echo "FAIL: prebuilt filter: the compiled-in programs differ from a fresh generation (rebuild)"
	fi
}
tier prebuilt prebuilt

# ---- stage the e2e tier ----
mkdir -p "$stage/bin" "$stage/progs" "$stage/e2e" "$stage/policy"
if [ -e "$BUILD/corral" ]; then
	cp "$BUILD/corral" "$stage/bin/corral"
fi
# The test-only build whose opens bypass the resolver (make bypass).
if [ -e "$BUILD/bypass/corral" ]; then
	cp "$BUILD/bypass/corral" "$stage/bin/corral-bypass"
fi
for p in "$BUILD"/tests/progs/*; do
	[ -f "$p" ] && [ -x "$p" ] && cp "$p" "$stage/progs/"
done
cp "$SRC"/tests/e2e/*.py "$stage/e2e/"
if [ -f "$SRC/policy/default.json" ]; then
	cp "$SRC/policy/default.json" "$stage/policy/"
fi
chmod -R a+rX,go-w "$stage/bin" "$stage/progs" "$stage/e2e" "$stage/policy"

if [ ! -x "$stage/progs/nons" ]; then
	echo "FAIL: e2e: $BUILD/tests/progs/nons is missing: nothing can run" |
		tee -a "$log"
fi

e2e_args="--corral $stage/bin/corral --progs $stage/progs"
e2e_args="$e2e_args --corral-bypass $stage/bin/corral-bypass"
e2e_args="$e2e_args --policy-dir $stage/policy --marker $marker"
# CORRAL_E2E_TIMES=1 prints each e2e test's seconds ("TIME: " lines).
# CORRAL_E2E_K=SUBSTRING runs only the e2e tests whose name contains it
# (a developer's loop; CI never sets it).
if [ -n "${CORRAL_E2E_K:-}" ]; then
	e2e_args="$e2e_args -k $CORRAL_E2E_K"
fi

# ---- the unprivileged tiers ----
# runner UID HOME SHARD: as UID (none when empty: the current user), with
# no capability at all, not even in the bounding set, HOME and TMPDIR its
# own: the e2e tests of SHARD (I/N, every Nth from the Ith), then the
# attack suites again with Landlock off (below), each test one at a time.
#
# The Landlock-off pass: the first runs Landlock wherever the kernel has
# it (--landlock defaults to auto); every attack must be refused by the
# supervisor alone too. The harness adds --landlock=off to every run and
# names the tests e2e-landlock-off/NAME. Only the tests those files define
# run (not those of files they import helpers from), and not those marked
# supervisor_only (budgets, the watchdog, errno parity: the Landlock layer
# plays no part).
ATTACK_FILES=a0,c0,d0,d3,d4,d6,d7,d8,d9,da,db,dc,dd,de,dg,dh,di,dj,dk,dl
runner() {
	r_uid=$1 r_home=$2 r_shard=$3
	if [ -n "$r_uid" ]; then
		r_as="setpriv --reuid=$r_uid --regid=$r_uid --clear-groups --inh-caps=-all --bounding-set=-all"
	else
		r_as=
	fi
	r_env="env -i PATH=$SAFE_PATH LANG=C.UTF-8 HOME=$r_home TMPDIR=$r_home/tmp PYTHONDONTWRITEBYTECODE=1 ${CORRAL_E2E_TIMES:+CORRAL_E2E_TIMES=$CORRAL_E2E_TIMES}"
	r_sfx=${r_shard:+-${r_shard%/*}}
	tier e2e$r_sfx $r_as $r_env timeout -k 10 "$E2E_TIMEOUT" \
		$PY "$stage/e2e/run.py" $e2e_args ${r_shard:+--shard $r_shard}
	tier e2e-landlock-off$r_sfx $r_as $r_env CORRAL_E2E_LANDLOCK=off \
		timeout -k 10 "$E2E_TIMEOUT" \
		$PY "$stage/e2e/run.py" $e2e_args --files $ATTACK_FILES \
		${r_shard:+--shard $r_shard}
}

# home DIR UID: a runner's HOME, with its TMPDIR, reachable by UID alone.
home() {
	mkdir -p "$1/tmp"
	[ -n "$2" ] && chown -R "$2:$2" "$1"
	chmod 0700 "$1"
}

if [ "$(id -u)" -eq 0 ]; then
	# The root-only cases, as root: corral started with every capability.
	mkdir -p "$stage/root/tmp"
	chmod 0700 "$stage/root"
	tier e2e-root env -i PATH=$SAFE_PATH LANG=C.UTF-8 \
		HOME="$stage/root" TMPDIR="$stage/root/tmp" \
		PYTHONDONTWRITEBYTECODE=1 ${CORRAL_E2E_TIMES:+CORRAL_E2E_TIMES=$CORRAL_E2E_TIMES} \
		timeout -k 10 "$E2E_TIMEOUT" \
		$PY "$stage/e2e/run.py" $e2e_args --root-only
	# The rest in two runners at once, one a CPU, each a uid of its own:
	# nobody, and daemon, which owns no file on Debian. Tests count what
	# their uid holds (SysV segments, tasks against RLIMIT_NPROC) and
	# what their TMPDIR holds, so two runners must share neither.
	second=$(id -u daemon 2>/dev/null) || second=
	case $second in
	'' | 0 | $NOBODY) second= ;;
	esac
	home "$stage/home" $NOBODY
	if [ -n "$second" ]; then
		home "$stage/home1" "$second"
		test_uids="0 $NOBODY $second"
		tmpdirs="$stage/root/tmp $stage/home/tmp $stage/home1/tmp"
		# The second's output is shown whole when it ends, so the log
		# does not interleave two runners' lines.
		runner "$second" "$stage/home1" 1/2 >"$stage/runner1.log" 2>&1 &
		r1=$!
		runner $NOBODY "$stage/home" 0/2
		wait $r1
		cat "$stage/runner1.log"
	else
		echo "note: no second unprivileged uid (daemon): one runner"
		test_uids="0 $NOBODY"
		tmpdirs="$stage/root/tmp $stage/home/tmp"
		runner $NOBODY "$stage/home" ""
	fi
else
	test_uids=$(id -u)
	home "$stage/home" ""
	tmpdirs="$stage/home/tmp"
	runner "" "$stage/home" ""
fi

# ---- hygiene ----
left=
for d in $tmpdirs; do
	for w in "$d"/corral-*; do
		[ -e "$w" ] && left="$left $w"
	done
done
if [ -n "$left" ]; then
	echo "FAIL: hygiene/workspaces: corral workspaces left behind:$left" |
		tee -a "$log"
else
	echo "PASS: hygiene/workspaces" | tee -a "$log"
fi

# Reading a process's files through the shell (not grep) keeps the marker
# out of this check's own command lines.
stray=
stray_pids=
for p in /proc/[0-9]*; do
	pid=${p#/proc/}
	[ "$pid" = "$$" ] && continue
	owner=$(stat -c %u "$p" 2>/dev/null) || continue
	case " $test_uids " in
	*" $owner "*) ;;
	*) continue ;;
	esac
	c=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)
	e=$({ tr '\0' ' ' <"$p/environ"; } 2>/dev/null)
	case "$c $e" in
	*"$marker"*)
		stray="$stray $pid:[$c]"
		stray_pids="$stray_pids $pid"
		;;
	esac
done
if [ -n "$stray" ]; then
	echo "FAIL: hygiene/processes: left running:$stray" | tee -a "$log"
	# They are this run's own (they carry its marker): end them by pid.
	for pid in $stray_pids; do
		kill -KILL "$pid" 2>/dev/null
	done
else
	echo "PASS: hygiene/processes" | tee -a "$log"
fi

# ---- verdict ----
passed=$(grep -c '^PASS: ' "$log")
failed=$(grep -c '^FAIL: ' "$log")
if [ "$failed" -gt 0 ]; then
	echo
	echo "Failures:"
	grep '^FAIL: ' "$log"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
