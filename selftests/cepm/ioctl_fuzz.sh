#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A short run of the structured ioctl fuzzer (ioctl_fuzz.c): random sequences of every
# ioctl, read and poll over several files and processes, with mutated structs, bad pointers,
# forks and kill -9 in the middle; every call must return success or an errno that
# docs/abi.md's Errors table gives for it, and no CEP may be left. Fixed seeds, so that a
# failure replays (ioctl_fuzz --seed N ...); CEPM_FUZZ_SEEDS and CEPM_FUZZ_CALLS override.
# Its time bounds (a call's watchdog, 5 s) catch hangs and scale with CEPM_LIMIT_SCALE.
# The kernel log is judged by dmesg_clean.sh at the end of the run.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
seeds=(${CEPM_FUZZ_SEEDS:-1 2})
calls=${CEPM_FUZZ_CALLS:-20000}
ktap_set_plan $((${#seeds[@]} + 1))

out=$CEPM_ROOT/out/ioctl_fuzz.$$
trap 'rm -f "$out"' EXIT
# fuzz DESCRIPTION ARGS...: one run of the fuzzer, its time bounds scaled; its failures first
# (each names its seed and call), then its summary; a KTAP result from its exit status.
fuzz() {
	local description=$1 rc
	shift
	"$CEPM_ROOT/out/selftests/ioctl_fuzz" "$@" --time-scale "${CEPM_LIMIT_SCALE:-1}" >"$out" 2>&1
	rc=$?
	{ grep -m 20 'FAIL' "$out"; tail -n 3 "$out"; } | sed 's/^/# /'
	ktap_check "$description" test $rc = 0
}
for seed in "${seeds[@]}"; do
	fuzz "seed $seed, $calls calls: documented errnos only, no CEP left" \
		--seed "$seed" --calls "$calls" --procs 4 --files 3
done

# A blocking read whose timer fires before the read has begun (the process was not scheduled
# in between, as seed 1 shows under KASAN) must still be ended by the timer, not wait for the
# watchdog. --late-reads makes every blocking read start that late.
fuzz "blocking reads that begin after their timer fired still end (--late-reads)" \
	--seed 1 --calls 2000 --procs 2 --files 2 --late-reads
ktap_finished
