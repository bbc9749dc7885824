#!/usr/bin/env bash
# make check: everything CI runs, in order, each step timed.  Stops at the first failure.
#   deps -> kernel (cached) -> cepm.ko (-Werror) -> clippy (kernel + host) -> userspace ->
#   selftests in one VM boot (its redirected log checked complete), then the short pair lane
#   (two guests, cepm against Debian 12's kernel), with the host tests beside
set -euo pipefail
CEPM_LOG_TAG=check
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

summary=()

step deps scripts/deps.sh
step kernel scripts/kernel.sh
step module make --no-print-directory module
step lint make --no-print-directory lint
step user make --no-print-directory user selftest-progs

# The host tests need no guest, and a TCG guest leaves part of the host idle: they run beside
# the guests' steps, at nice 19 so that the guests are not slowed, their output kept in
# out/check-host-test.log and shown when both are done.  Whichever fails first stops the other.
host_log=out/check-host-test.log
host_secs=out/.check-host-test.secs
log "== host-test (beside the guests: its output in $host_log, shown at the end)"
(
	start=$SECONDS
	rc=0
	nice -n 19 make --no-print-directory host-test >"$host_log" 2>&1 || rc=$?
	echo $((SECONDS - start)) >"$host_secs"
	exit $rc
) &
host_pid=$!
guest_summary=out/.check-guest-steps
guest_steps() {
	local first=${#summary[@]}
	# The selftests' boot also shows that a redirected log keeps the host's and the guest's
	# output whole (scripts/check-vm-log.sh): one boot fewer than a check of its own.  What
	# `make selftest` would build first, the steps above have built.
	step selftest scripts/check-vm-log.sh --selftest
	# Then two kernels across a link: cepm against Debian 12's 6.1 (make check-pair's short
	# lane; the whole suite on three pairings is make check-pair).
	step pair scripts/check-pair.sh --short
	printf '%s\n' "${summary[@]:first}" >"$guest_summary"
}
guest_steps &
guest_pid=$!
# Jobs started with & ignore SIGINT: ^C reaches this shell alone, which stops them.
stop_both() { kill_tree "$host_pid"; kill_tree "$guest_pid"; }
trap 'stop_both; exit 130' INT
trap 'stop_both; exit 143' TERM
host_failed() {
	log "FAILED: host-test; its output:"
	sed 's/^/  | /' "$host_log" >&2
	printf '  %s\n' "${summary[@]}" >&2
	exit 1
}
first_rc=0
wait -n -p first "$host_pid" "$guest_pid" || first_rc=$?
if [ "$first" = "$host_pid" ]; then
	[ "$first_rc" = 0 ] || { kill_tree "$guest_pid"; wait "$guest_pid" || :; host_failed; }
	wait "$guest_pid" || exit 1
else
	[ "$first_rc" = 0 ] || { kill_tree "$host_pid"; wait "$host_pid" || :; exit 1; }
	wait "$host_pid" || host_failed
fi
sed 's/^/  | /' "$host_log" >&2
summary+=("$(step_line host-test "$(cat "$host_secs")")")
mapfile -t -O ${#summary[@]} summary <"$guest_summary"
rm -f "$host_secs" "$guest_summary"

log "all checks passed in ${SECONDS}s:"
printf '  %s\n' "${summary[@]}" >&2
