#!/usr/bin/env bash
# Runs on guest A of scripts/vm-pair: checks the pair end to end, each check a line
# "ok"/"not ok" on stdout, and exits 1 if one fails.
#   scripts/vm-pair -- scripts/vm-pair-rping.sh
# 1. the link: A pings B's address;
# 2. the channel: a command on B returns its output and exit status;
# 3. rping, B the server and A the client, then A the server and B the client, each 3 pings
#    of verified data, whichever connection manager each guest runs (CEPM_PAIR_*_STACK).
# shellcheck disable=SC2317 # the checks are functions that check() calls
set -euo pipefail
: "${PEER:?run by scripts/vm-pair, which sets PEER}"
A=10.78.0.1 B=10.78.0.2
failed=0
check() {
	local what=$1
	shift
	if "$@"; then echo "ok - $what"; else echo "not ok - $what"; failed=1; fi
}

# Which connection manager each side runs: its modules and the librdmacm rping maps.
stack() { lsmod | awk '$1 ~ /^(cepm|ib_cm|rdma_cm|rdma_ucm)$/ { printf "%s ", $1 }'; uname -r; ldd "$(command -v rping)" | awk '/librdmacm/ { print $3 }'; }
echo "# A: $(stack | tr '\n' ' ')"
echo "# B: $($PEER "$(declare -f stack); stack" | tr '\n' ' ')"

# Debian's host has no ping of its own; busybox's serves.
check "A pings B over the link" busybox ping -c 3 -W 5 "$B"

channel() {
	local out rc=0
	out=$($PEER 'uname -r; echo to-stderr >&2; exit 3') || rc=$?
	printf '%s\n' "$out" | sed 's/^/# B: /'
	[ "$rc" = 3 ] && grep -qx to-stderr <<<"$out"
}
check "the channel returns B's output and exit status" channel

# rping_pair SERVER_ON CLIENT_ON: a server started in the background on one guest, the
# client on the other, both run under timeout; the server's exit status and output are
# collected from B through the channel when B is the server.
rping_b_server() {
	local rc=0
	$PEER "(timeout 120 rping -s -a $B -C 3 -v; echo server-rc=\$?) >/tmp/rping-s.log 2>&1 &"
	sleep 2
	timeout 120 rping -c -a "$B" -C 3 -v || rc=$?
	echo "# client exit $rc"
	# shellcheck disable=SC2016 # expanded on B
	$PEER 'for _ in $(seq 100); do grep -q server-rc /tmp/rping-s.log && break; sleep 0.2; done
		sed "s/^/# B: /" /tmp/rping-s.log; grep -qx server-rc=0 /tmp/rping-s.log' || rc=1
	[ "$rc" = 0 ]
}
check "rping: server on B, client on A" rping_b_server

rping_a_server() {
	local rc=0 pid
	timeout 120 rping -s -a "$A" -C 3 -v >/tmp/rping-s.log 2>&1 &
	pid=$!
	sleep 2
	$PEER "timeout 120 rping -c -a $A -C 3 -v" | sed 's/^/# B: /' || rc=1
	wait "$pid" || rc=1
	sed 's/^/# A: /' /tmp/rping-s.log
	[ "$rc" = 0 ]
}
check "rping: server on A, client on B" rping_a_server

exit $failed
