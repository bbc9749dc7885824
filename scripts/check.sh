#!/usr/bin/env bash
# make check: everything CI runs, in order, each step timed.  Stops at the first failure.
#   deps -> kernel (cached) -> cepm.ko (-Werror) -> clippy (kernel + host) -> userspace ->
#   host tests -> a redirected VM log is complete -> selftests in one VM boot
set -euo pipefail
CEPM_LOG_TAG=check
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

summary=()
step() {
	local name=$1 start=$SECONDS
	shift
	log "== $name"
	if ! "$@"; then
		log "FAILED: $name"
		printf '  %s\n' "${summary[@]}" >&2
		exit 1
	fi
	summary+=("$(printf '%-10s %4ss' "$name" $((SECONDS - start)))")
}

step deps scripts/deps.sh
step kernel scripts/kernel.sh
step module make --no-print-directory module
step lint make --no-print-directory lint
step user make --no-print-directory user
step host-test make --no-print-directory host-test
step vm-log scripts/check-vm-log.sh
step selftest make --no-print-directory selftest

log "all checks passed in ${SECONDS}s:"
printf '  %s\n' "${summary[@]}" >&2
