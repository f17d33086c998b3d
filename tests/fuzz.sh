#!/bin/sh
# tests/fuzz.sh: build the libFuzzer targets of the policy and request
# parsers and of the supervisor's decoding of task memory with clang (ASan +
# UBSan) and run each on its seed corpus.
#
# FUZZ_SECONDS (default 30) is the time per target; FUZZ_BUILD (default
# build/fuzz) holds the binaries, the growing corpora and any crash inputs;
# FUZZ_TARGETS picks some. The decode target links the whole supervisor and
# needs BUILD (default build) to hold build/tracer/filter_prebuilt.c (`make`).
# Exits non-zero when a target crashes, leaks or trips a sanitizer.
set -eu

cd "$(dirname "$0")/.."
out=${FUZZ_BUILD:-build/fuzz}
secs=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}
build=${BUILD:-build}
targets=${FUZZ_TARGETS:-"policy request values netmsg decode"}

mkdir -p "$out"
sh tests/embed.sh cr_default_policy_json < policy/default.json \
	> "$out/default_policy.c"

# The parsers are built from source with the fuzzer's instrumentation; the
# warnings are the project's, so a target cannot hide a sloppy helper.
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wimplicit-fallthrough -Wno-unused-parameter -Iinclude \
	$(pkg-config --cflags libcjson)"
libs=$(pkg-config --libs libcjson)

# Keys, units and shapes the parsers know, so mutations reach past the
# first strcmp.
cat > "$out/json.dict" <<'DICT'
"\"version\""
"\"classes\""
"\"default\""
"\"fs\""
"\"read\""
"\"write\""
"\"exec\""
"\"deny\""
"\"hide\""
"\"net\""
"\"allow\""
"\"limits\""
"\"env\""
"\"cpu\""
"\"memory\""
"\"wall\""
"\"processes\""
"\"output\""
"\"disk\""
"\"files\""
"\"net-bytes\""
"\"net-connections\""
"\"net-conn-time\""
"\"id\""
"\"command\""
"\"cwd\""
"\"class\""
"\"inputs\""
"\"outputs\""
"\"network\""
"\"stdin\""
"\"from\""
"\"to\""
"\"extract\""
"ms"
"s\""
"m\""
"h\""
"B\""
"KiB"
"MiB"
"GiB"
"TiB"
"18446744073709551615"
"9007199254740993"
"\"/usr\""
"/../"
"//"
"\\u0000"
"\\ud800"
":443"
":*"
":1-1024"
"[::1]"
"10.0.0.0/8"
"[fe80::/10]"
"true"
"false"
"null"
DICT

for t in $targets; do
	[ "$t" = decode ] && continue
	# shellcheck disable=SC2086
	$cc $cflags -o "$out/fuzz_$t" "tests/fuzz/fuzz_$t.c" policy/*.c \
		"$out/default_policy.c" $libs
done

# decode: every supervisor source but main.c, the build tool and the
# network handlers (which the target includes, for their static decoders),
# compiled with the fuzzer's instrumentation, two at a time.
case " $targets " in
*" decode "*)
	if [ ! -f "$build/tracer/filter_prebuilt.c" ]; then
		echo "FAIL: fuzz/decode: $build/tracer/filter_prebuilt.c is missing (make first)"
		exit 1
	fi
	pkgs="libseccomp libunwind-ptrace libcjson libcap nettle libarchive"
	obj=$out/obj
	mkdir -p "$obj"
	srcs=$(ls tracer/*.c tracer/*/*.c | grep -v -e '^tracer/main\.c$' \
		-e '^tracer/filtergen\.c$' -e '^tracer/handlers/net\.c$')
	# shellcheck disable=SC2086
	printf '%s\n' $srcs "$build/tracer/filter_prebuilt.c" | xargs -P 2 -I{} \
		sh -c 'o="$1/$(echo "$2" | tr / _).o"; [ "$o" -nt "$2" ] ||
			exec '"$cc"' '"$cflags"' -Itracer $(pkg-config --cflags '"$pkgs"') -c "$2" -o "$o"' \
		_ "$obj" {}
	# shellcheck disable=SC2086
	$cc $cflags -Itracer $(pkg-config --cflags $pkgs) -o "$out/fuzz_decode" \
		tests/fuzz/fuzz_decode.c "$obj"/*.o policy/*.c \
		"$out/default_policy.c" -Wl,--wrap=close \
		$(pkg-config --libs $pkgs) -lpthread -ldl
	;;
esac

status=0
for t in $targets; do
	mkdir -p "$out/corpus-$t"
	if "$out/fuzz_$t" -max_total_time="$secs" -max_len=65536 -timeout=10 \
		-dict="$out/json.dict" -artifact_prefix="$out/crash-$t-" \
		-print_final_stats=1 "$out/corpus-$t" "tests/fuzz/corpus/$t" \
		> "$out/fuzz_$t.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
			"$out/fuzz_$t.log")
		echo "PASS: fuzz/$t (${runs:-?} runs in ${secs}s)"
	else
		echo "FAIL: fuzz/$t (see $out/fuzz_$t.log)"
		tail -n 30 "$out/fuzz_$t.log"
		status=1
	fi
done
exit $status
