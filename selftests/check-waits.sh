#!/usr/bin/env bash
# Host-side rules for the selftests' polling waits (make host-test).
#
# wait_until SECONDS CMD... runs CMD again until it succeeds. A command substitution in CMD's
# words, as in `wait_until 5 test "$(tx)" = 3`, is expanded once, before wait_until runs: the
# probe is frozen and the wait never sees the counter move, so it passes or fails on the first
# look alone. The probe must be a command (a function such as `tx_is REJ 3`) that reads
# afresh each time. Arithmetic ($((...))) is expanded once too, but is a fixed value on purpose.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)/cepm
# After the bound: any $( that does not open $((; comment lines aside.
frozen=$(grep -nE 'wait_until +[^ ]+ .*\$\([^(]' "$dir"/*.sh | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
if [ -n "$frozen" ]; then
	echo "check-waits: wait_until with a command substitution in its probe (expanded once, never re-polled):" >&2
	echo "$frozen" | sed "s|^$dir/|  |" >&2
	exit 1
fi
echo "check-waits: every wait_until probe is re-run on each poll"
