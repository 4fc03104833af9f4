# pscluster - top-level Makefile.
#
# Public targets. Each first runs scripts/install-deps.sh for its set of Debian packages
# (in brackets), which installs the missing ones as root and prints what it installs, and
# otherwise prints the command to run as root and fails:
#   all (default)  libraries and tools under build/ [build]
#   check          unit tests (plain and ASan/UBSan), protocol tests, integration and
#                  namespace tests (root), style; under 8 minutes on 2 CPUs, the slowest
#                  suites listed at the end [build, --check]
#   demo           the quick start: a short show of what works [build, --demo]
#   bench          benchmarks against the peers; figures go to bench/RESULTS.md by hand, but
#                  BENCH="--headline [ID...]" refreshes its headline table (and README's)
#                  from a run (bench/headline.sh) [build, --bench]
#   soak           the long runs make check leaves out or keeps short: 60 s of psid under
#                  full CPU load, RDP's fault run at 10,000 messages, the same-node epoll0
#                  scenario 200 times under load, the suites of run-tests.sh's LONG list,
#                  make fuzz at 5 s per target (clang) (CI runs it after check) [--check]
#   tsan           the preload library and plsem under ThreadSanitizer (build/tsan): the
#                  semantics suite on both paths, no report allowed [--check]
#   fuzz           longer fuzz runs of every decoder (FUZZ_SECONDS, default 60 each)
#                  [build, --check]
#   install        PREFIX (/usr/local), DESTDIR and the directories below [build, through
#                  all]; as root on the real system it also adds the user pscluster
#   deb            the Debian packages (debian/, dpkg-buildpackage -b in a copy of the tree)
#                  into build/deb/ [build, --deb]
#   deb-check      deb, then lintian, their contents and a smoke run of the unpacked tree
#                  (scripts/deb-check.sh; CI runs it after make soak) [build, --deb]
#   clean, format, format-check (no packages asked for)
#
# Internal targets (build-*, the sanitizer tree) run in a sub-make so that pkg-config is
# asked only after the packages are there.

PREFIX  ?= /usr/local
DESTDIR ?=
# where make install (and install-files, which debian/rules calls) puts things
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
DOCDIR       ?= $(PREFIX)/share/doc/pscluster
UNITDIR      ?= $(PREFIX)/lib/systemd/system
PRELOADDIR   ?= $(LIBDIR)
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# libpmi.so and libpmi2.so (the PMI client libraries; the Debian packages keep them out of
# the linker's path, beside libpspreload.so, as Slurm's and MPICH's have the same names)
PMIDIR       ?= $(LIBDIR)
# where psrun --preload and pspreload look for libpspreload.so, relative to their own
# directory (build/bin -> build/lib; BINDIR -> PRELOADDIR: the Debian packages set it)
PRELOAD_RELDIR ?= ../lib
# the version: debian/changelog's first line (psi.pc)
VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog 2>/dev/null)
BUILD   ?= build
CC      ?= cc
SAN     ?=

PKGS       := libconfig libsodium libcrypto libnl-route-3.0 libseccomp
WARN       := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT        ?= -O2
CFLAGS     ?= $(OPT) -g
ifeq ($(SAN),1)
CFLAGS     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN      := -fsanitize=address,undefined
endif
# make tsan's tree (build/tsan): the fences of the same-node rings order memory shared with
# another process, which ThreadSanitizer cannot follow (-Wno-tsan)
ifeq ($(SAN),thread)
CFLAGS     := -O1 -g -fno-omit-frame-pointer -fsanitize=thread -Wno-tsan
LDSAN      := -fsanitize=thread
endif
# Intel IPsec-MB (no pkg-config file; amd64 only, installed there by install-deps.sh): the
# fast packet MAC of rdp/mac_ipsecmb.c. Without its header RDP uses libsodium and libcrypto.
ifneq ($(wildcard /usr/include/intel-ipsec-mb.h),)
MB_DEFS    := -DHAVE_IPSEC_MB
MB_LIBS    := -lIPSec_MB
endif
ALL_CFLAGS  = -std=gnu11 $(WARN) -D_GNU_SOURCE -fPIC -Iinclude -Itest/lib $(CFLAGS) \
              -DPSC_VERSION='"$(VERSION)"' \
              $(shell pkg-config --cflags $(PKGS)) $(MB_DEFS)
SYS_LIBS    = $(shell pkg-config --libs $(PKGS)) $(MB_LIBS)
ALL_LDFLAGS = $(LDSAN) $(LDFLAGS)

RDP_SRC   := $(wildcard rdp/*.c)
PSI_SRC   := $(wildcard psi/*.c)
LOOP_SRC  := $(wildcard loop/*.c)
LOG_SRC   := $(wildcard logger/*.c)
PSID_SRC  := $(wildcard psid/*.c)
PSIDC_SRC := $(filter-out psid/main.c,$(PSID_SRC)) pmi/wire.c
CONF_SRC  := $(wildcard conf/*.c)
TOOL_SRC  := $(wildcard tools/*.c)
RDPB_SRC  := $(wildcard rdpbench/*.c)
PSL_SRC   := $(wildcard pslocal/*.c)
PRE_SRC   := $(wildcard preload/*.c)
TLIB_SRC  := test/lib/runner.c
UNIT_SRC  := $(wildcard test/unit/*.c)
RDPT_SRC  := $(wildcard test/rdp/*.c)
FUZZ_SRC  := $(wildcard test/fuzz/fuzz_*.c)
TTOOL_SRC := $(wildcard test/tools/*.c)
MPI_SRC   := $(wildcard test/mpi/*.c)
PMIT_SRC  := $(wildcard test/pmi/*.c)

LIBRDP    := $(BUILD)/lib/librdp.a
LIBCONF   := $(BUILD)/lib/libpsconf.a
LIBPSI    := $(BUILD)/lib/libpsi.a
LIBLOOP   := $(BUILD)/lib/libpsloop.a
LIBPSIDC  := $(BUILD)/lib/libpsidcore.a
LIBLOG    := $(BUILD)/lib/libpslogger.a
LIBRDPB   := $(BUILD)/lib/librdpbench.a
LIBPSL    := $(BUILD)/lib/libpslocal.a
LIBS      := $(LIBLOG) $(LIBPSI) $(LIBLOOP) $(LIBCONF) $(LIBRDP)
TOOLS     := $(patsubst tools/%.c,$(BUILD)/bin/%,$(TOOL_SRC)) $(BUILD)/bin/psid
# the preload library; in the sanitizer trees it is preloaded after the sanitizer's runtime
# (test/shell/preload_cancel.sh, make tsan), and the ASan tree's has the lock checker
# (fdtable.c: a thread that ends holding a lock of the library's aborts the process)
PRELOAD   := $(BUILD)/lib/libpspreload.so
ifeq ($(SAN),1)
$(BUILD)/obj/preload/%.o: CFLAGS += -DPSP_LOCK_CHECK
endif
# The library's thread-local variables (its references held, the cancellation state) are
# looked at in every wrapped call: initial-exec, an offset from the thread pointer, instead
# of a call to __tls_get_addr at each look (the library is preloaded, so it is loaded with
# the program and its TLS is in the static block)
$(BUILD)/obj/preload/%.o: CFLAGS += -ftls-model=initial-exec
# the PMI client libraries (include/pmi.h, include/pmi2.h): each links its own copy of the
# channel (pmi/client.c) and the wire (pmi/wire.c) and exports its API only
PMI_LIBS  := $(BUILD)/lib/libpmi.so $(BUILD)/lib/libpmi2.so
UNIT_BIN  := $(BUILD)/test/unit-tests
RDPT_BIN  := $(BUILD)/test/rdp-tests
TTOOLS    := $(patsubst test/tools/%.c,$(BUILD)/test/tools/%,$(TTOOL_SRC))
# MPI programs of the PMI tests and bench/mpi.sh, built with MPICH's mpicc when it is there
# (install-deps.sh --check installs it), not in the sanitizer tree
MPICC     ?= mpicc
MPI_BIN   := $(if $(SAN),,$(if $(shell command -v $(MPICC) 2>/dev/null),\
               $(patsubst test/mpi/%.c,$(BUILD)/test/mpi/%,$(MPI_SRC))))
# programs linked against libpmi.so (test/pmi/pmi1_*.c) and libpmi2.so (pmi2_*.c)
PMIT_BIN  := $(patsubst test/pmi/%.c,$(BUILD)/test/pmi/%,$(PMIT_SRC))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# Objects are never removed as intermediates: two goals in one call (make -j2 all
# build-tests) would otherwise delete a tool's object that the other still links.
.SECONDARY:

.PHONY: all check soak tsan demo bench fuzz install install-files deb deb-check clean format \
        format-check build-all build-tests build-fuzz

all:
	@scripts/install-deps.sh
	@$(MAKE) --no-print-directory -j$(JOBS) build-all

build-all: $(LIBS) $(TOOLS) $(PRELOAD) $(PMI_LIBS)

build-tests: build-all $(UNIT_BIN) $(RDPT_BIN) $(TTOOLS) $(MPI_BIN) $(PMIT_BIN) \
             $(BUILD)/test/tools/rawcat-static \
             $(BUILD)/test/psid-hooks

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/logger/preloadlib.o: ALL_CFLAGS += -DPSPRELOAD_RELDIR='"$(PRELOAD_RELDIR)"'

# Archives are made afresh (rm first): ar would keep a member whose source moved to
# another library, and the two definitions would clash at link time.
$(LIBRDP): $(call obj,$(RDP_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBCONF): $(call obj,$(CONF_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBPSI): $(call obj,$(PSI_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# the event loop of psid and rdpbench
$(LIBLOOP): $(call obj,$(LOOP_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBLOG): $(call obj,$(LOG_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# rdpbench's benchmark and pslocal's virtual clusters (rdpbench/, pslocal/, a file per job);
# tools/rdpbench.c and tools/pslocal.c are their mains
$(LIBRDPB): $(call obj,$(RDPB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBPSL): $(call obj,$(PSL_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# the node daemon: main.c over libpsidcore.a (psid's modules, which the unit tests link too)
$(LIBPSIDC): $(call obj,$(PSIDC_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/bin/psid: $(BUILD)/obj/psid/main.o $(LIBPSIDC) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< $(LIBPSIDC) $(LIBS) $(SYS_LIBS) -lm -o $@

# psid with privcall.c's test hooks (PSID_TEST_HOOKS): an engine that forges what it asks of
# its privileged child (test/shell/psid_privforge.sh). Never installed.
$(BUILD)/obj/psid/privcall-hooks.o: psid/privcall.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DPSID_TEST_HOOKS -MMD -MP -c $< -o $@
$(BUILD)/test/psid-hooks: $(BUILD)/obj/psid/main.o $(BUILD)/obj/psid/privcall-hooks.o $(LIBPSIDC) \
                          $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $(BUILD)/obj/psid/main.o $(BUILD)/obj/psid/privcall-hooks.o $(LIBPSIDC) \
	    $(LIBS) $(SYS_LIBS) -lm -o $@

$(BUILD)/bin/%: $(BUILD)/obj/tools/%.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< $(LIBS) $(SYS_LIBS) -lm -o $@

$(BUILD)/bin/rdpbench: $(BUILD)/obj/tools/rdpbench.o $(LIBRDPB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< $(LIBRDPB) $(LIBS) $(SYS_LIBS) -lm -o $@

$(BUILD)/bin/pslocal: $(BUILD)/obj/tools/pslocal.o $(LIBPSL) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< $(LIBPSL) $(LIBS) $(SYS_LIBS) -lm -o $@

UNIT_OBJ := $(call obj,$(UNIT_SRC) $(TLIB_SRC) preload/wire.c preload/spinrule.c preload/lifecycle.c)
$(UNIT_BIN): $(UNIT_OBJ) $(LIBPSIDC) $(LIBRDPB) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $(UNIT_OBJ) $(LIBPSIDC) $(LIBRDPB) $(LIBS) $(SYS_LIBS) -lcunit -lm -o $@

$(RDPT_BIN): $(call obj,$(RDPT_SRC) $(TLIB_SRC)) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $(call obj,$(RDPT_SRC) $(TLIB_SRC)) $(LIBS) $(SYS_LIBS) -lcunit -lm -o $@

# libpspreload.so: its own objects, RDP and libpsi (the node table with it), linked whole; only
# the wrapped functions are exported (preload/exports.map)
PRE_OBJ := $(call obj,$(PRE_SRC) $(RDP_SRC) $(PSI_SRC))
$(BUILD)/lib/libpspreload.so: $(PRE_OBJ) preload/exports.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(ALL_LDFLAGS) -Wl,--version-script=preload/exports.map -Wl,-z,defs \
	    $(PRE_OBJ) $(shell pkg-config --libs libsodium libcrypto) $(MB_LIBS) -ldl -lpthread -o $@

# libpmi.so.0 and libpmi2.so.0 (Slurm's sonames), with their .so.0 links in the build tree
$(PMI_LIBS): $(BUILD)/lib/%.so: $(BUILD)/obj/pmi/%.o $(call obj,pmi/client.c pmi/wire.c) pmi/%.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(ALL_LDFLAGS) -Wl,-soname,$(notdir $@).0 -Wl,--version-script=pmi/$*.map \
	    -Wl,-z,defs $(filter %.o,$^) -lpthread -o $@
	ln -sf $(notdir $@) $@.0

# programs of the PMI library tests, linked against the build tree's libraries
$(BUILD)/test/pmi/pmi1_%: $(BUILD)/obj/test/pmi/pmi1_%.o $(BUILD)/lib/libpmi.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lpmi -o $@
$(BUILD)/test/pmi/pmi2_%: $(BUILD)/obj/test/pmi/pmi2_%.o $(BUILD)/lib/libpmi2.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lpmi2 -o $@

# small programs the integration tests drive (test/tools/NAME.c -> build/test/tools/NAME)
$(BUILD)/test/tools/%: $(BUILD)/obj/test/tools/%.o $(LIBPSIDC) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $< $(LIBPSIDC) $(LIBS) $(SYS_LIBS) -lm -o $@

$(BUILD)/test/mpi/%: test/mpi/%.c
	@mkdir -p $(dir $@)
	$(MPICC) -std=gnu11 -O2 -Wall -Wextra -Werror $< -o $@

# the same raw-syscall client linked statically: the loader never preloads into it (no
# sanitizers: they do not link statically)
$(BUILD)/test/tools/rawcat-static: test/tools/rawcat.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static $< -o $@

# libFuzzer targets need clang. The library sources are compiled once for them (with
# -fsanitize=fuzzer-no-link and RDP_FUZZING) into one archive, which each target links.
FUZZ_LIB_SRC := $(RDP_SRC) $(CONF_SRC) $(PSI_SRC) $(LOOP_SRC) $(PSIDC_SRC) $(LOG_SRC) \
                $(RDPB_SRC) preload/wire.c
FUZZ_CFLAGS   = -std=gnu11 -D_GNU_SOURCE -DRDP_FUZZING $(MB_DEFS) -Iinclude -g -O1 \
                $(shell pkg-config --cflags $(PKGS))
FUZZ_LIB := $(BUILD)/fuzz/libfuzzcore.a
FUZZ_BIN := $(patsubst test/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
build-fuzz: $(FUZZ_BIN)
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
$(FUZZ_LIB): $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/fuzz/%: $(BUILD)/fuzz/obj/test/fuzz/%.o $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	clang -fsanitize=fuzzer,address,undefined $< $(FUZZ_LIB) $(SYS_LIBS) -lm -o $@

# parallel builds: as many jobs as CPUs
JOBS := $(shell nproc 2>/dev/null || echo 2)

# make check: the plain and sanitizer trees and their tests (the fuzz tree and its runs are
# make soak's, to keep make check under 8 minutes on 2 CPUs)
check:
	@scripts/install-deps.sh --check
	@$(MAKE) --no-print-directory -j$(JOBS) build-tests
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build/san SAN=1 build-tests
	@scripts/run-tests.sh

soak:
	@scripts/install-deps.sh --check
	@$(MAKE) --no-print-directory -j$(JOBS) build-tests
	@if command -v clang >/dev/null; then $(MAKE) --no-print-directory -j$(JOBS) build-fuzz; fi
	@scripts/soak.sh

# the daemons of the clusters are the plain tree's; the library and plsem are ThreadSanitizer's
tsan:
	@scripts/install-deps.sh --check
	@$(MAKE) --no-print-directory -j$(JOBS) build-tests
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build/tsan SAN=thread \
	    build/tsan/lib/libpspreload.so build/tsan/test/tools/plsem
	@scripts/tsan.sh

demo:
	@scripts/install-deps.sh --demo
	@$(MAKE) --no-print-directory -j$(JOBS) build-all
	@scripts/demo.sh

# the benchmarks also drive the small test programs (bench/psid.sh: sigstamp, jobdrive)
bench:
	@scripts/install-deps.sh --bench
	@$(MAKE) --no-print-directory -j$(JOBS) build-all $(TTOOLS)
	@bench/run.sh $(BENCH)

# the fuzz step of the test driver alone, longer; inputs that reach new code join the seed
# corpus (test/fuzz/corpus/, which make soak's short runs start from)
fuzz:
	@scripts/install-deps.sh --check
	@$(MAKE) --no-print-directory -j$(JOBS) build-fuzz
	@secs=$${FUZZ_SECONDS:-60}; STEPS=f FUZZ_MERGE=$${FUZZ_MERGE:-1} FUZZ_SECONDS=$$secs \
	    STEP_TIMEOUT=$$((secs + 120)) scripts/run-tests.sh

install: all
	@$(MAKE) --no-print-directory install-files
	@# psid's engine runs as this user (psid.user); only on the real system, as root
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && ! getent passwd pscluster >/dev/null; then \
	    echo "install: adding the system user pscluster (psid's unprivileged engine)"; \
	    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	        pscluster; \
	fi

# the files of a built tree, no packages asked for (debian/rules calls it after build-all)
PSI_HEADERS := psi.h psi_bcast.h psi_hostlist.h psi_nodes.h psi_signames.h psi_tasklist.h \
               psi_tid.h psmsg.h psproto.h
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(PRELOADDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -m 644 $(LIBS) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(BUILD)/lib/libpspreload.so $(DESTDIR)$(PRELOADDIR)/
	install -m 644 include/*.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(wildcard docs/man/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(wildcard docs/man/*.8) $(DESTDIR)$(MANDIR)/man8/
	install -m 644 conf/psid.conf README.md INSTALL $(DESTDIR)$(DOCDIR)/
	sed 's|/usr/bin/psid|$(BINDIR)/psid|' conf/psid.service >$(DESTDIR)$(UNITDIR)/psid.service
	@# libpsi, the client library, for pkg-config (static: Libs.private are its own needs)
	@# the PMI client libraries and their pkg-config files (pscluster-pmi, pscluster-pmi2)
	install -d $(DESTDIR)$(PMIDIR)
	for l in pmi pmi2; do \
	    install -m 644 $(BUILD)/lib/lib$$l.so $(DESTDIR)$(PMIDIR)/lib$$l.so.0 && \
	    ln -sf lib$$l.so.0 $(DESTDIR)$(PMIDIR)/lib$$l.so && \
	    printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(PMIDIR)' 'includedir=$(INCLUDEDIR)' '' \
	        "Name: pscluster-$$l" \
	        "Description: pscluster's $$l client library (psid's PMI server, under psrun)" \
	        'Version: $(VERSION)' "Cflags: -I\$${includedir}" \
	        "Libs: -L\$${libdir} -Wl,-rpath,\$${libdir} -l$$l" \
	        >$(DESTDIR)$(PKGCONFIGDIR)/pscluster-$$l.pc || exit 1; \
	done
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
	    'Name: psi' 'Description: pscluster client library (talk to psid: tasks, nodes, signals)' \
	    'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lpsi' \
	    >$(DESTDIR)$(PKGCONFIGDIR)/psi.pc

# the Debian packages, built in a copy of the tracked tree (dpkg-buildpackage writes beside
# the tree, and cleans it) into build/deb/; deb-check checks them (scripts/deb-check.sh)
deb:
	@scripts/install-deps.sh --deb
	@scripts/deb-check.sh --build-only

deb-check:
	@scripts/install-deps.sh --deb
	@scripts/deb-check.sh

clean:
	rm -rf build

FORMAT_SRC = $(shell git ls-files '*.c' '*.h')
format:
	clang-format -i $(FORMAT_SRC)
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRC)

-include $(shell find $(BUILD)/obj $(BUILD)/fuzz/obj -name '*.d' 2>/dev/null)
