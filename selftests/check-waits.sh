#!/usr/bin/env bash
# Host-side rules for the selftests' polling waits (make host-test).
#
# wait_until SECONDS CMD... runs CMD again until it succeeds. A command substitution in CMD's
# words, as in `wait_until 5 test "$(tx REJ)" = 3`, is expanded once, before wait_until runs:
# the probe is frozen and the wait never sees the counter move, so it passes or fails on the
# first look alone. The probe must be a command that reads afresh each time (lib.sh's
# `counter_is tx REJ 3`, say). Arithmetic ($((...))) is expanded once too, on purpose.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Every script that sources lib.sh. After the bound and before any ;, | or &: a $( that does
# not open $((, or a backquote; comment lines aside.
frozen=$(cd "$root" && grep -HnE 'wait_until[[:space:]]+[^[:space:]]+[[:space:]][^;|&]*(\$\([^(]|`)' \
	selftests/cepm/*.sh scripts/bench-guest.sh | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
if [ -n "$frozen" ]; then
	echo "check-waits: wait_until with a command substitution in its probe (expanded once, never re-polled):" >&2
	echo "$frozen" | sed 's/^/  /' >&2
	exit 1
fi
echo "check-waits: every wait_until probe is re-run on each poll"

# A wait's own report ("# wait_until: true after 3 s") must not land in the caller's output:
# tests take probes' answers from $(...) (cep_req_validation's forged), and a slow guest made
# such an answer "9" plus that line. lib.sh is sourced here with a stand-in for the kernel's
# KTAP helpers.
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/tools/testing/selftests/kselftest"
echo '__ktap_test() { :; }' >"$stub/tools/testing/selftests/kselftest/ktap_helpers.sh"
late=$(
	CEPM_ROOT=$stub CEPM_KDIR=$stub
	. "$root/selftests/cepm/lib.sh"
	ready_at=$((SECONDS + 3))
	ready() { [ $SECONDS -ge $ready_at ]; }
	wait_until 10 ready 2>/dev/null
	echo answer
)
if [ "$late" != answer ]; then
	echo "check-waits: a wait that came true late wrote into its caller's output: '$late'" >&2
	exit 1
fi
echo "check-waits: a wait's report goes to stderr, never into its caller's output"
