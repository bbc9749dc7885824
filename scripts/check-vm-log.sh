#!/usr/bin/env bash
# A log redirected to a file keeps everything: what the host printed before the guest booted,
# the guest's own output, and what came after.  (QEMU opens the console's path; handed
# /proc/self/fd/1 of a regular file, it truncates the file.)  And a long command reaches the
# guest whole: `make selftest` hands the guest all 48 entries, more than the 2048 bytes of
# the kernel's command line, where vng carries --exec's string (scripts/vm).
#   scripts/check-vm-log.sh              one quick boot, no guest setup, 400 words to echo
#   scripts/check-vm-log.sh --selftest   the selftests (scripts/selftest.sh, once `make module
#                                        user selftest-progs` has built what they need), their
#                                        output in out/check-selftest.log and shown as it
#                                        comes: the check rides on the boot make check needs
# Both ways the guest must get a command of over 2048 bytes whole: the quick boot's 400 words
# are its arguments; the selftests take them in the guest's environment (scripts/vm's
# CEPM_VM_ANNOUNCE), and each guest states on its stderr what it got, counted and checksummed,
# which must match `scripts/selftest.sh --plan`'s share for it.  The exit status is the
# command's, or 1 when it passed but the log lacks something.
set -euo pipefail
CEPM_LOG_TAG=vm-log
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

selftest=
[ "${1:-}" != --selftest ] || selftest=1
if [ -n "$selftest" ]; then
	mkdir -p out
	log=out/check-selftest.log
	# Emptied before tail opens it: tail would otherwise show a previous run's log first.
	: >"$log"
else
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
fi

# guest_cmd: what runs between the host's lines.  The quick boot: 400 words, 4,000 bytes in
# all, each argument counted and checksummed in the guest.
long=()
for i in $(seq 1000 1399); do long+=("w$i"); done
long_sum=$(printf '%s\n' "${long[@]}" | cksum)
guest_cmd() {
	if [ -n "$selftest" ]; then
		CEPM_VM_ANNOUNCE="${long[*]}" scripts/selftest.sh
	else
		CEPM_VM_NO_SETUP=1 scripts/vm -- sh -c 'echo "guest: stdout"; echo "guest: stderr" >&2
			echo "guest: $# arguments, $(printf "%s\n" "$@" | cksum)"' sh "${long[@]}"
	fi
}

(
	rc=0
	echo "host: before the guest"
	echo "host: stderr before the guest" >&2
	guest_cmd || rc=$?
	[ $rc = 0 ] || echo "host: the guest's command failed ($rc)"
	echo "host: after the guest"
	exit $rc
) >"$log" 2>&1 &
writer=$!
# The selftests' output as it comes; tail stops within a second of the writer.
[ -z "$selftest" ] || tail -n +1 --pid=$writer -f "$log" &
rc=0
wait $writer || rc=$?
wait

missing=0
text=$(tr -d '\r' <"$log")
need() { grep -qxF "$1" <<<"$text" || { log "missing from the redirected log: '$1'"; missing=1; }; }
need "host: before the guest"
need "host: stderr before the guest"
need "host: after the guest"
if [ -n "$selftest" ]; then
	# What each guest must have got: selftests/run.sh and its share of the entries (one guest
	# per two host CPUs; their lines prefixed [K] when there are several).
	plan=$(scripts/selftest.sh --plan)
	mapfile -t guests <<<"$plan"
	while read -r _ g _ _ _ share; do
		read -ra words <<<"$share"
		prefix=
		[ ${#guests[@]} = 1 ] || prefix="[$g] "
		need "${prefix}vm-guest: $((${#words[@]} + 1)) arguments, $(printf '%s\n' selftests/run.sh "${words[@]}" |
			cksum); announced $long_sum"
	done <<<"$plan"
else
	need "guest: stdout"
	need "guest: stderr"
	need "guest: ${#long[@]} arguments, $long_sum"
fi
if [ $missing != 0 ]; then
	[ -n "$selftest" ] || { log "the log as written:"; sed 's/^/  | /' "$log" >&2; }
	[ $rc != 0 ] || rc=1
elif [ -n "$selftest" ]; then
	log "the redirected log $log keeps the host's and the guests' output ($(wc -l <"$log") lines)"
else
	log "a redirected log keeps the host's and the guest's output ($(wc -l <"$log") lines)"
fi
exit $rc
