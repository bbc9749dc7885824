#!/usr/bin/env bash
# make check-kasan: the selftests, the fuzzers at full scale and the storms, on a KASAN
# (generic, inline, vmalloc) + lockdep + kmemleak + DEBUG_ATOMIC_SLEEP kernel of the same
# 7.3.4 source as the default test kernel, built with clang 19 in a Debian trixie chroot
# (scripts/kasan.sh).  Not part of `make check`: a cold run builds that kernel first (about 40
# minutes on 2 cores), and the tests run five to six times slower than on the GCC kernel.
#
# The module is built for that kernel in the chroot, into that kernel's own object directory
# (out/kbuild/<tree>/, as every module build), so the build for the default kernel is untouched.
#
# The whole lane takes about 85 minutes in one boot on a 2-core TCG host; it also runs in four
# parts, which together run every selftest of `selftests/run.sh --list` once
# (`scripts/check-kasan.sh --parts` lists them):
#   mad-fuzz   mad_fuzz.sh at 10^6 MADs
#   stress     the ioctl fuzzer, the storms, device removal, rmmod, the privilege rules
#   tools      rdma-core's tools and the stock CM: interop_*, rdmacm_*, coexist, verbs
#   protocol   every other test
#
# Environment: CEPM_KASAN_PART (one of the four parts), CEPM_KASAN_TESTS (the tests to run
# instead; default: every selftest), CEPM_MAD_FUZZ_COUNT (default
# 1000000), CEPM_FUZZ_SEEDS and CEPM_FUZZ_CALLS (default 10 seeds x 100000 calls),
# CEPM_STORM_ITERATIONS (default 10000 per topology), CEPM_PERFTEST_ATTEMPTS (default 6: how
# often a perftest pair may run while its clock calibration is what failed; 3 in make check),
# CEPM_KASAN_START_LIMIT (default 1800: the
# seconds the guest has to boot and start the tests),
# CEPM_LIMIT_SCALE (default 25: every test's time limit times 25; the limits catch hangs, and
# at full scale under KASAN mad_fuzz.sh alone takes about 2,600 s).
set -euo pipefail
CEPM_LOG_TAG=check-kasan
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

# kasan_part TEST: the part of the lane TEST@TOPOLOGY belongs to.
kasan_part() {
	case $1 in
	mad_fuzz.sh*) echo mad-fuzz ;;
	ioctl_fuzz.sh* | storms.sh* | device_removal* | rmmod.sh* | privileges.sh*) echo stress ;;
	interop_* | rdmacm_* | coexist_ib_cm.sh* | verbs_pingpong.sh*) echo tools ;;
	*) echo protocol ;;
	esac
}
# kasan_part_tests PART: the selftests of PART, in run.sh's order.
kasan_part_tests() {
	local all t
	all=$(selftests/run.sh --list) || die "selftests/run.sh --list failed"
	for t in $all; do
		[ "$(kasan_part "$t")" != "$1" ] || echo "$t"
	done
}
kasan_parts=(mad-fuzz stress tools protocol)
if [ "${1:-}" = --parts ]; then
	for part in "${kasan_parts[@]}"; do
		echo "$part: $(kasan_part_tests "$part" | tr '\n' ' ')"
	done
	exit 0
fi
if [ -n "${CEPM_KASAN_PART:-}" ]; then
	[ -z "${CEPM_KASAN_TESTS:-}" ] || die "CEPM_KASAN_PART and CEPM_KASAN_TESTS: give one of them"
	known=
	for part in "${kasan_parts[@]}"; do [ "$part" != "$CEPM_KASAN_PART" ] || known=1; done
	[ -n "$known" ] || die "CEPM_KASAN_PART must be one of: ${kasan_parts[*]}"
	CEPM_KASAN_TESTS=$(kasan_part_tests "$CEPM_KASAN_PART" | tr '\n' ' ')
	# An empty list would make run.sh run every selftest: the hours the parts exist to avoid.
	[ -n "${CEPM_KASAN_TESTS// /}" ] || die "part $CEPM_KASAN_PART has no tests (selftests/run.sh --list failed?)"
	log "part $CEPM_KASAN_PART: $CEPM_KASAN_TESTS"
fi

summary=()

kasan_kdir=
kasan_kernel() { kasan_kdir=$(scripts/kasan.sh kernel | tail -n 1) && [ -f "$kasan_kdir/.cepm-built" ]; }

kasan_module() {
	# In the KASAN tree's own object directory (the Makefile's OBJDIR), where scripts/vm
	# finds it for that KDIR.
	scripts/kasan.sh run make -C "$kasan_kdir" M="$CEPM_ROOT" MO="$(cepm_objdir "$kasan_kdir")" \
		LLVM=-19 modules
}

step deps scripts/deps.sh
step kernel scripts/kernel.sh
step kasan-kernel kasan_kernel
step kasan-module kasan_module
step user make --no-print-directory user
step progs make --no-print-directory selftest-progs

# no5lvl: with 5-level paging (which TCG's "-cpu max" offers), 7.3 KASAN reports a
# wild-memory-access while the boot CPU is identified, before any module loads: a known false
# positive (docs/hardening.md).  kasan_multi_shot: every report is printed, not the first only.
# The guest's console is in the log, live: a KASAN report or a hang shows while the lane runs.
# A guest that has not started the tests (no KTAP file) within $CEPM_KASAN_START_LIMIT seconds
# is stopped, and the step fails: a KASAN guest's boot can stall for the better part of an
# hour with nothing in the log to say so, and the lane would otherwise wait for it.
kasan_selftests() {
	KDIR=$kasan_kdir CEPM_VM_MEMORY=${CEPM_VM_MEMORY:-4G} \
		CEPM_VM_APPEND="no5lvl kasan_multi_shot" CEPM_VM_CONSOLE=1 \
		scripts/vm -- env CEPM_LIMIT_SCALE="${CEPM_LIMIT_SCALE:-25}" \
		CEPM_MAD_FUZZ_COUNT="${CEPM_MAD_FUZZ_COUNT:-1000000}" \
		CEPM_FUZZ_SEEDS="${CEPM_FUZZ_SEEDS:-1 2 3 4 5 6 7 8 9 10}" \
		CEPM_FUZZ_CALLS="${CEPM_FUZZ_CALLS:-100000}" \
		CEPM_STORM_ITERATIONS="${CEPM_STORM_ITERATIONS:-10000}" \
		CEPM_PERFTEST_ATTEMPTS="${CEPM_PERFTEST_ATTEMPTS:-6}" \
		bash -c 'selftests/run.sh "$@" 2>&1 | tee "$0"; exit ${PIPESTATUS[0]}' "$ktap_log" \
		${CEPM_KASAN_TESTS:-} &
	local vm=$! rc
	# A job in the background ignores ^C: pass it on.
	trap 'kill_tree "$vm"; exit 130' INT TERM
	start_watchdog "$vm" "${CEPM_KASAN_START_LIMIT:-1800}" &
	local dog=$!
	wait "$vm"
	rc=$?
	trap - INT TERM
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	return $rc
}
# start_watchdog VM_PID SECONDS: stops scripts/vm (VM_PID) if $ktap_log has not appeared
# within SECONDS.
start_watchdog() {
	local deadline=$((SECONDS + $2))
	while [ ! -e "$ktap_log" ]; do
		if [ $SECONDS -ge "$deadline" ]; then
			log "the guest had not started the tests after $2 s (no $ktap_log): stopping it"
			kill_tree "$1"
			return 1
		fi
		sleep 5
	done
}
# The KASAN guest's stdout (the command's, not the kernel console's) reaches this log only
# when the guest ends (the GCC kernel's streams; why the KASAN boot's does not is not known),
# so the KTAP is also written to a file in the guest's writable out/, where it can be
# followed while the lane runs.
ktap_log=$CEPM_ROOT/out/check-kasan.ktap
rm -f "$ktap_log"
log "the guest's KTAP, as it runs: $ktap_log"
step selftest kasan_selftests

log "all KASAN checks passed in ${SECONDS}s:"
printf '  %s\n' "${summary[@]}" >&2
