# SPDX-License-Identifier: GPL-2.0
# cepm: the two commands a user needs are `make demo` and `make check` (see README.md).
#
#   make deps      install build/test dependencies (idempotent)
#   make kernel    build the cached test kernel (~/.cache/cepm/linux-*)
#   make           build cepm.ko against KDIR (default: the cached kernel), into
#                  out/kbuild/<KDIR's name>/ (OBJDIR)
#   make user      build the userspace crate, cepmctl and cepm's librdmacm.so.1
#   make host-test host-side Rust tests
#   make selftest  boot the test kernel and run every selftest in it (scripts/selftest.sh)
#   make check     all of the above, as CI runs it
#   make check-pair   the pair suite on two guests, cepm against Debian 12's kernel, the
#                  test kernel's stock CM and cepm on a second kernel (scripts/check-pair.sh;
#                  make check runs its short lane)
#   make check-kasan  the selftests and fuzzers at full scale on a KASAN kernel (not in check;
#                  CEPM_KASAN_PART=mad-fuzz|stress|tools|protocol runs one of its four parts)
#   make stress    connection storms of 10^6 iterations per topology (CEPM_STORM_ITERATIONS)
#   make install   cepm.ko (for KDIR's kernel), cepmctl, the udev rule, cepm's librdmacm.so.1
#                  and cepm-run; DESTDIR, PREFIX
#   make demo      boot the VM and show cepm live: cepmctl, rdma-core's rping over cepm's librdmacm
#   make bench     connect/disconnect timings, cepm against the stock CM (out/bench.md)
#   make bench-listen  the listener table with 1024 listens in one shard of a folded hash
#                  (out/bench-listen.md)
#   make lint      the docs check, cepm.ko under clippy (CLIPPY=1), cargo clippy, fmt-check
#   make fmt-check every Rust file formatted as rustfmt.toml (the kernel's settings) says
#   make fmt       format them

CEPM_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cepm
export CEPM_CACHE
export PATH := $(CEPM_CACHE)/tools/bin:$(CEPM_CACHE)/venv/bin:$(HOME)/.cargo/bin:$(PATH)
# bindgen (module build) loads PyPI's libclang from the venv `make deps` creates. Only export it
# once it exists: an empty value exported by the top-level make (before deps ran, on a cold
# machine) would shadow it in every sub-make.
CEPM_LIBCLANG := $(firstword $(wildcard $(CEPM_CACHE)/venv/lib/python3*/site-packages/clang/native))
ifneq ($(CEPM_LIBCLANG),)
export LIBCLANG_PATH ?= $(CEPM_LIBCLANG)
endif

# Any CONFIG_RUST tree built with this machine's rustc works; the cached one is the default.
KDIR ?= $(shell cat $(CEPM_CACHE)/current-kernel 2>/dev/null)

# Each kernel tree gets an object directory of its own (kbuild's MO=, "Building External
# Modules" in the kernel's Documentation/kbuild/modules.rst): a build for one kernel never reads
# the objects, bindings and dependency files made for another, whose dependency lists name
# files in that other kernel's tree for make to remake there.  Named after the tree's real path,
# so that the /lib/modules/*/build links of two kernels get two directories (scripts/common.sh's
# cepm_objdir says the same).
OBJDIR ?= $(CURDIR)/out/kbuild/$(notdir $(realpath $(KDIR)))
MODULE_MAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) MO=$(OBJDIR)

CARGO ?= cargo

.PHONY: all module deps kernel user host-test selftest selftest-progs check check-pair check-kasan stress demo bench bench-listen lint fmt fmt-check clean need-kdir install

all: module

need-kdir:
	@test -n "$(KDIR)" -a -f "$(KDIR)/Module.symvers" || \
		{ echo "No built kernel tree: run 'make kernel' or pass KDIR=<built CONFIG_RUST tree>"; exit 1; }

module: need-kdir
	$(MODULE_MAKE) modules

lint: need-kdir fmt-check
	scripts/check-docs.sh
	$(MODULE_MAKE) CLIPPY=1 modules
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Every Rust source of ours (the module, proto/ with its fuzz targets, cepm/, cepmctl/, rdmacm/),
# not bindings that a build in the source tree (plain `make -C KDIR M=...`) generates.
RUST_SOURCES = $(shell find rust proto cepm cepmctl rdmacm -name '*.rs' -not -path '*/target/*' -not -name '*_bindings.rs')

fmt-check:
	@echo "rustfmt --check: $(words $(RUST_SOURCES)) files"
	@rustfmt --edition 2021 --check $(RUST_SOURCES)

fmt:
	rustfmt --edition 2021 $(RUST_SOURCES)

deps:
	scripts/deps.sh

kernel:
	scripts/kernel.sh

# cepmctl, and cepm's librdmacm.so.1 (out/rdmacm/; rdmacm/cepm-run runs a program with it).
user:
	$(CARGO) build --release -p cepmctl
	scripts/rdmacm-link.sh

# The protocol core has its own, fuller check (oracles, fuzzing); the rest of the workspace is
# plain cargo test.
host-test:
	scripts/check-proto-mount.sh
	$(CARGO) test --workspace --exclude cepm-proto
	scripts/rdmacm-link.sh
	rdmacm/check-symbols.sh
	rdmacm/check-symbols-test.sh
	selftests/check-waits.sh
	selftests/check-holders.sh
	scripts/check-vm-log-test.sh
	scripts/check-vm-args-test.sh
	selftests/check-tool-pair.sh
	selftests/check-plan.sh
	scripts/check-config-missing.sh
	scripts/check-docs-test.sh
	proto/check.sh

# The guest's C test programs, built on the host against the UAPI header (ioctl_abi also against
# the kernel's kselftest harness), each rebuilt only when its source or a header changed.
SELFTEST_PROGS = $(addprefix out/selftests/,ioctl_abi ioctl_fuzz privileges rdma_reject_server \
	rdma_reject_client rdma_srq_server ucp_client_server rdma_qp_before_accept rdma_channel_events \
	rdma_stale_pointers rdma_listener_race rdma_async_resolve rdma_multicast rdma_ece rdma_user_events \
	rdma_qp_ex rdma_bind_ports rdma_portals rdma_conn_params rdma_multicast_full rdma_devices cm_clock.so \
	ah_linger.so busy_clock)
SELFTEST_HEADERS = include/uapi/cepm.h selftests/cepm/rdma_test.h selftests/cepm/roce_route.h \
	selftests/cepm/multicast_test.h
selftest-progs: $(SELFTEST_PROGS)

out/selftests/%: selftests/cepm/%.c $(SELFTEST_HEADERS)
	@mkdir -p out/selftests
	$(CC) -Wall -Werror -O2 -D_GNU_SOURCE $(PROG_CFLAGS) -o $@ $< $(PROG_LIBS)

# ioctl_abi uses the kernel's kselftest harness: rebuilt for another kernel tree too.
out/selftests/ioctl_abi: $(wildcard $(KDIR)/tools/testing/selftests/kselftest_harness.h) | need-kdir
out/selftests/ioctl_abi: PROG_CFLAGS = -Iinclude/uapi -I$(KDIR)/tools/testing/selftests
out/selftests/ioctl_fuzz out/selftests/privileges: PROG_CFLAGS = -Iinclude/uapi
out/selftests/rdma_reject_server out/selftests/rdma_reject_client out/selftests/rdma_channel_events \
	out/selftests/rdma_stale_pointers out/selftests/rdma_async_resolve out/selftests/rdma_ece \
	out/selftests/rdma_user_events out/selftests/rdma_bind_ports out/selftests/rdma_conn_params: \
	PROG_LIBS = -lrdmacm
out/selftests/rdma_srq_server out/selftests/rdma_qp_before_accept out/selftests/rdma_qp_ex \
	out/selftests/rdma_portals out/selftests/rdma_multicast_full out/selftests/rdma_devices: \
	PROG_LIBS = -lrdmacm -libverbs
out/selftests/rdma_multicast: PROG_LIBS = -lrdmacm -libverbs -lpthread
# Its own ioctl stands in front of glibc's for the library too: exported (-rdynamic).
out/selftests/rdma_listener_race: PROG_CFLAGS = -Iinclude/uapi -rdynamic
out/selftests/rdma_listener_race: PROG_LIBS = -lrdmacm
# UCX's own example, built as it is from the source libucx-dev ships (middleware.sh).
UCX_EXAMPLES = /usr/share/doc/libucx-dev/examples
out/selftests/ucp_client_server: $(UCX_EXAMPLES)/ucp_client_server.c
	@mkdir -p out/selftests
	$(CC) -O2 -w -I$(UCX_EXAMPLES) -o $@ $< -lucp -lucs
# A fixture (selftests/runner/), used by hand.
out/selftests/busy_clock: selftests/runner/busy_clock.c
	@mkdir -p out/selftests
	$(CC) -Wall -Werror -O2 -o $@ $<
# LD_PRELOAD libraries, not programs: they find the real calls with dlsym.
out/selftests/cm_clock.so out/selftests/ah_linger.so: out/selftests/%.so: selftests/cepm/%.c
	@mkdir -p out/selftests
	$(CC) -Wall -Werror -O2 -D_GNU_SOURCE -shared -fPIC -o $@ $< -ldl

selftest: module user selftest-progs
	scripts/selftest.sh

check:
	scripts/check.sh

check-pair: module user selftest-progs
	scripts/check-pair.sh

check-kasan:
	scripts/check-kasan.sh

# Hours under TCG: each test's time limit is scaled to fit.
CEPM_STORM_ITERATIONS ?= 1000000
stress: module user selftest-progs
	scripts/vm -- env CEPM_STORM_ITERATIONS=$(CEPM_STORM_ITERATIONS) \
		CEPM_LIMIT_SCALE=$$(( $(CEPM_STORM_ITERATIONS) / 2000 + 1 )) \
		selftests/run.sh storms.sh@loopback storms.sh@two-hosts

# The udev rule makes /dev/cepm usable by every user, under the module's rules (docs/abi.md,
# "Privileges and limits").
PREFIX ?= /usr/local
install: module user
	$(MODULE_MAKE) INSTALL_MOD_PATH=$(DESTDIR) modules_install
	install -D -m 0755 target/release/cepmctl $(DESTDIR)$(PREFIX)/bin/cepmctl
	install -D -m 0644 udev/90-cepm.rules $(DESTDIR)/etc/udev/rules.d/90-cepm.rules
	install -D -m 0755 out/rdmacm/librdmacm.so.1 $(DESTDIR)$(PREFIX)/lib/cepm/librdmacm.so.1
	install -D -m 0755 rdmacm/cepm-run $(DESTDIR)$(PREFIX)/bin/cepm-run

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh

bench-listen:
	scripts/bench-listen.sh

# Every kernel's object directory; the checkout itself holds no build products.
clean:
	rm -rf out/kbuild
	-[ -n "$(KDIR)" ] && $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -f rust/shim_bindings.rs rust/uapi_bindings.rs
	$(CARGO) clean
