# corral: build, test and install the unprivileged sandbox supervisor.
# One plain Makefile; every knob below says why it is there.

PREFIX ?= /usr/local
BUILD  ?= build
CC     ?= cc
# demo and check build with one job per CPU (a serial build of corral and
# its test-only twin took 84 s of a CI run's 15 minutes on two CPUs). The
# packages come first: pkg-config needs them before anything compiles.
JOBS   ?= $(shell nproc 2>/dev/null || echo 1)

# nettle: SHA-256 of inputs, artifacts, documents and the audit chain, and
# base64 (tracer/audit/sha256.c). libarchive reads the tar and zip archives
# given as inputs (corral writes every entry itself, beneath the workspace);
# like libunwind-ptrace, only its headers are used at build time: it is
# loaded with dlopen by the runs that extract an archive.
PKGS := libseccomp libunwind-ptrace libcjson libcap nettle libarchive
LINKED := $(filter-out libunwind-ptrace libarchive,$(PKGS))

# -std=c11 with _GNU_SOURCE: the code is C11; the kernel interfaces (openat2,
# pidfd, process_vm_readv, signalfd) are GNU/Linux extensions.
# The warning set catches the classes of bug that matter in a supervisor:
# shadowed names and format strings (audit/result writers), implicit
# fallthrough in the state tables, and prototypes so every non-static symbol
# is declared in include/.
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wimplicit-fallthrough \
	-Wno-unused-parameter
# Hardening: the supervisor parses documents and tracee memory; make stack
# smashing and format bugs fail loudly rather than silently.
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
OPT    ?= -O2 -g
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(HARDEN) -Iinclude \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS) $(EXTRA_CFLAGS)
# Every close() of the supervisor goes through tracer/guard.c's
# __wrap_close, so that the last close of a program's socket the loop holds
# a copy of (SO_LINGER) never holds the loop: whichever handler made it.
LDFLAGS_ALL = -pie -Wl,-z,relro,-z,now -Wl,--wrap=close $(LDFLAGS) \
	$(EXTRA_LDFLAGS)
# libunwind-ptrace is not linked: tracer/surface.c loads it with dlopen for
# --stacks only (four libraries fewer to map at every start); its headers
# are still needed.
LIBS = $(shell pkg-config --libs $(LINKED) 2>/dev/null) -lpthread -ldl

POLICY_SRC := $(sort $(wildcard policy/*.c))
TRACER_SRC := $(sort $(filter-out tracer/filtergen.c,$(wildcard tracer/*.c tracer/*/*.c)))
LIB_OBJ    := $(POLICY_SRC:%.c=$(BUILD)/%.o) $(BUILD)/policy/default_policy.o
TRACER_OBJ := $(TRACER_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC   := $(sort $(wildcard tests/unit/*.c))
PROG_SRC   := $(sort $(wildcard tests/progs/*.c))
PROGS      := $(PROG_SRC:tests/progs/%.c=$(BUILD)/tests/progs/%)

.PHONY: all deps demo check check-unit check-e2e asan install clean fuzz soak bench compat bypass
all: $(BUILD)/corral $(BUILD)/tests/unit/run-unit $(PROGS)

$(BUILD)/%.o: %.c $(wildcard include/corral/*.h) $(wildcard tracer/*.def tracer/*.h tracer/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# The default policy is compiled in, so a run never depends on a file the
# caller's cwd or the program could change.
$(BUILD)/policy/default_policy.c: policy/default.json tests/embed.sh
	@mkdir -p $(dir $@)
	sh tests/embed.sh cr_default_policy_json < $< > $@

$(BUILD)/policy/default_policy.o: $(BUILD)/policy/default_policy.c
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/corral: $(TRACER_OBJ) $(LIB_OBJ) $(BUILD)/tracer/filter_prebuilt.o
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# The seccomp program of every built-in profile is generated here, once, by
# a tool linked from the same objects: libseccomp's generation costs ~2 ms
# of every run's start-up otherwise. `make check` regenerates and compares.
$(BUILD)/filtergen: $(BUILD)/tracer/filtergen.o $(filter-out $(BUILD)/tracer/main.o,$(TRACER_OBJ)) $(LIB_OBJ)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/tracer/filter_prebuilt.c: $(BUILD)/filtergen
	$(BUILD)/filtergen > $@.tmp && mv $@.tmp $@

$(BUILD)/tracer/filter_prebuilt.o: $(BUILD)/tracer/filter_prebuilt.c tracer/tracer.h
	$(CC) $(CFLAGS_ALL) -Itracer -c $< -o $@

# The profile tests read tracer/syscalls.def as data: rebuild when it moves.
# The pure parts of tracer/io/ (names, links, digests) are unit-tested too,
# tracer/taskfd.c (which fd table a thread uses) on threads of its own,
# tracer/termsafe.c (the echo's terminal filter) and tracer/budget/shanon.c
# (the shared anonymous memory ledger), tracer/budget/listcache.c (the
# walk's kept listings); tracer/guard.c for the close()
# every linked object's calls go through (LDFLAGS_ALL).
IO_UNIT_OBJ := $(BUILD)/tracer/io/digest.o $(BUILD)/tracer/io/place.o \
	$(BUILD)/tracer/audit/sha256.o $(BUILD)/tracer/taskfd.o \
	$(BUILD)/tracer/termsafe.o $(BUILD)/tracer/budget/shanon.o \
	$(BUILD)/tracer/budget/listcache.o \
	$(BUILD)/tracer/guard.o
$(BUILD)/tests/unit/run-unit: $(UNIT_SRC) $(LIB_OBJ) $(IO_UNIT_OBJ) tracer/syscalls.def
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $(filter %.c %.o,$^) $(LIBS)

# Test programs are hostile or probing by design; they build without the
# supervisor's hardening so they can do odd things (raw syscalls, int 0x80).
$(BUILD)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wno-unused-result -o $@ $< -lpthread

deps:
	@sh tests/deps.sh

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@sh tests/demo.sh $(BUILD)

# A test-only corral whose open handlers answer CONTINUE, the resolver
# bypassed (-DCR_TEST_BYPASS_OPEN, tracer/handlers/open.c): the suite runs
# it to show that Landlock alone still refuses reading outside the roots.
# Its proxy also checks the TLS server name of every connection (loopback
# can never be allowed by name otherwise), so the suite can test the check.
# Built apart in $(BUILD)/bypass, never installed.
bypass:
	$(MAKE) BUILD=$(BUILD)/bypass \
		EXTRA_CFLAGS="$(EXTRA_CFLAGS) -DCR_TEST_BYPASS_OPEN" \
		$(BUILD)/bypass/corral

check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all bypass
	@sh tests/run.sh $(BUILD)

# AddressSanitizer + UBSan build of everything, then the whole suite on it.
asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		EXTRA_LDFLAGS="-fsanitize=address,undefined" check

# FUZZ_SECONDS per target (default 30), FUZZ_TARGETS to pick some; the
# decode target links the supervisor, so the generated filter comes first.
fuzz: $(BUILD)/tracer/filter_prebuilt.c
	@BUILD=$(BUILD) sh tests/fuzz.sh

# Long, not part of check: SOAK_N sequential runs (default 1000), batches of
# SOAK_M concurrent ones (16), SOAK_K supervisors SIGKILLed at random points
# (100), then what is left on the host is counted (docs/limits.md).
soak: all
	/usr/bin/python3 tests/soak.py --corral $(BUILD)/corral

bench: all
	@sh bench/run $(BUILD)

# Real suites (CPython's regression tests, pytest, pip, git, cmake, node...)
# natively and under corral, side by side; long, so not part of check. See
# docs/compatibility.md. CORRAL=PATH judges another build; COMPAT_ONLY=REGEX
# picks rows; COMPAT_ARGS passes more options to the driver.
COMPAT_JOBS ?= 2
compat: all
	@sh tests/compat/deps.sh
	/usr/bin/python3 tests/compat/compat.py -j $(COMPAT_JOBS) \
		--corral $(if $(CORRAL),$(CORRAL),$(BUILD)/corral) \
		--progs $(BUILD)/tests/progs \
		$(if $(COMPAT_ONLY),--only '$(COMPAT_ONLY)') \
		--markdown $(BUILD)/compat.md --details $(BUILD)/compat.json \
		$(COMPAT_ARGS)

install: $(BUILD)/corral
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/corral
	install -m 0755 $(BUILD)/corral $(DESTDIR)$(PREFIX)/bin/corral
	install -m 0644 policy/default.json $(DESTDIR)$(PREFIX)/share/corral/default.json

clean:
	rm -rf build build-asan
