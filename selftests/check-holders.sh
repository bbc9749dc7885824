#!/usr/bin/env bash
# Host-side check of selftests/cepm/holders.sh (make host-test): telling a holder that has
# already ended something must fail that check, not end the whole test. Writing to a fifo with
# no reader raises SIGPIPE, which kills bash before its EXIT trap can run: privileges.sh would
# then leave the guest with its udev rules, cepm's small limits and /dev/cepm 0666 for the next
# test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

rc=0
out=$(
	bash -c '
		work=$(mktemp -d)
		trap "rm -rf \"\$work\"; echo cleaned-up" EXIT
		ktap_print_msg() { echo "# $*"; }
		# The holder runs the command it is given, as no one in particular.
		helper_as() { HELPER_AS=(); }
		. "$1/selftests/cepm/holders.sh"
		hold gone nobody sh -c "echo ready" || exit 3
		wait "${HOLDER_PID[gone]}"
		if holder_tell gone go; then echo told; else echo refused; fi
		holder_release gone >/dev/null
		exit 0
	' check-holders "$root" 2>&1
) || rc=$?

fail=
case $out in *refused*) ;; *) fail="holder_tell to an ended holder did not fail" ;; esac
case $out in *cleaned-up*) ;; *) fail="${fail:+$fail; }the caller's EXIT trap never ran" ;; esac
[ $rc = 0 ] || fail="${fail:+$fail; }the caller ended with status $rc"
if [ -n "$fail" ]; then
	echo "check-holders: $fail; its output:" >&2
	echo "$out" | sed 's/^/  /' >&2
	exit 1
fi
echo "check-holders: a holder that has ended is refused, and the caller goes on to its cleanup"
