#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RC QPs created through libibverbs carry real data over rxe.  `cepmctl verbs-selftest` connects
# two QPs on one port to each other by hand (INIT -> RTR -> RTS with each other's QPN and PSNs
# and the port's RoCE v2 GID, as the CM will hand them out) and runs a ping-pong in which the
# server verifies every message and the client every echo.  No connection manager is involved.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

# /dev/infiniband/uverbsN, which libibverbs opens, comes from ib_uverbs.
modprobe ib_uverbs
uverbs_has_dev() { grep -qx "$RXE_DEV" /sys/class/infiniband_verbs/uverbs*/ibdev 2>/dev/null; }

# run_selftest ARGS...: the self-test on $RXE_DEV; its output, as KTAP diagnostics, and status.
run_selftest() {
	local out rc
	out=$("$CEPMCTL" verbs-selftest --device "$RXE_DEV" "$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/# /'
	SELFTEST_OUT=$out
	return $rc
}

# verified BYTES ARGS...: the run succeeds and both ends verified BYTES in all.
verified() {
	local bytes=$1
	shift
	run_selftest "$@" && grep -qx "verbs-selftest: OK, $bytes bytes verified" <<<"$SELFTEST_OUT"
}

# fails_with TEXT ARGS...: the run exits non-zero and reports TEXT.
fails_with() {
	local text=$1
	shift
	! run_selftest "$@" && grep -qF "$text" <<<"$SELFTEST_OUT"
}

ktap_check "ib_uverbs exposes $RXE_DEV" wait_until 10 uverbs_has_dev
# 4 packets per message at rxe's 1024-byte MTU: 800 packets, across the client's PSN wrap.
ktap_check "100 round trips of 4096 bytes verified by both ends" \
	verified $((2 * 100 * 4096)) --iterations 100 --size 4096
ktap_check "1-byte messages verified" verified $((2 * 50)) --iterations 50 --size 1
ktap_check "path MTU 256: 65536-byte messages (256 packets each) verified" \
	verified $((2 * 10 * 65536)) --iterations 10 --size 65536 --mtu 256
ktap_check "a corrupted echo fails the run and is reported" \
	fails_with "payload mismatch in echo 3 at byte 2048" --iterations 10 --size 4096 --corrupt-echo-at 3
ktap_check "a path MTU above the port's is refused before RTR" \
	fails_with "invalid path_mtu" --iterations 1 --size 64 --mtu 4096
ktap_finished
