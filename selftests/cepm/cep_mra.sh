#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# MRA: a server slower than the client's REQ timeout.  Without an MRA the client gives up
# (REQ_ERROR); with one armed, the client's REQ retry is answered by an MRA, its timeout is
# extended, and the connection completes.  And the other way: a client slower than the server's
# REP timeout, which has armed an MRA for the REP (as Linux's rdma_cm does for every REP it
# receives), answers the REP's retries with MRAs; a server answering many connections
# (accept --count) takes them in its stride.  A server can also send its MRA at once with a
# service timeout of its choice (CEPM_IOC_PREPARE_MRA flags), and a REQ left unclaimed in the
# backlog answers the client's retries with an MRA by itself, as rdma_cm does.  Loopback, or
# with the server in another namespace.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 12

out=$CEPM_ROOT/out/cep_mra.$$
trap 'topology_down; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$1"; }
# REQ: 4 sends of 2 x 1 ms + 1024 ms: the client gives up after about 4.1 s. The server must
# claim the REQ before the first retry, or the kernel answers that retry with its own MRA
# (the last check) and the client without an MRA stays alive. On a machine loaded with extra
# VMs a claim can come later than 258 ms; a second is far above what a loaded machine has
# shown. With an MRA armed, the server has over 3 s to arm it before the last retry...
fast_client=(--cm-only --max-cm-retries 3 --cm-response-timeout 18 --packet-life-time 8 --timeout-ms 30000)
# ... and the server answers after 6 s, when the client without an MRA has given up.
slow_server=(--device "$SERVER_DEV" --cm-only --answer-delay-ms 6000 --timeout-ms 30000)
ktap_check "topology $TOPOLOGY is up" topology_up

# run_pair N SID SERVER_ARGS... -- : a server (accept) on the server's host and one fast
# client for service SID; their outputs go to $out.aN and $out.cN, "CLIENT SERVER" exit codes
# to $out.rN.  pair: the same, then its outputs logged and its exit codes in crc and arc.
run_pair() {
	local n=$1 sid=$2 server=() apid crc=0 arc=0
	shift 2
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	"${SERVER[@]}" "$CEPMCTL" accept --service-id "$sid" "${server[@]}" >"$out.a$n" 2>&1 &
	apid=$!
	wait_until 10 listening "$out.a$n"
	"$CEPMCTL" connect --service-id "$sid" "${fast_client[@]}" "${TO_SERVER[@]}" >"$out.c$n" 2>&1 || crc=$?
	wait $apid || arc=$?
	echo "$crc $arc" >"$out.r$n"
}
pair_results() {
	crc=unknown arc=unknown
	read -r crc arc <"$out.r$1"
	show_files "$out.a$1" "$out.c$1"
}
pair() {
	run_pair "$@"
	pair_results "$1"
}

pair 1 0x0000000001064e40 "${slow_server[@]}" --
ktap_check "without an MRA, the slow server loses the client (REQ_ERROR)" \
	sh -c "test $crc != 0 && grep -q 'got REQ_ERROR' '$out.c1'"

mra_tx0=$("$CEPMCTL" tx-count "$SERVER_DEV" 1 MRA)
pair 2 0x0000000001064e41 --mra "${slow_server[@]}" --
ktap_check "with an MRA armed, the same client and server connect and disconnect" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q 'event TIMEWAIT_EXIT' '$out.c2'"
ktap_check "the client saw MRA_RECEIVED with Linux's service timeout 24" \
	grep -q 'event MRA_RECEIVED on CEP [0-9]* (service timeout 24)' "$out.c2"
ktap_check "the server sent the MRA (on the client's REQ retry)" \
	test "$("$CEPMCTL" tx-count "$SERVER_DEV" 1 MRA)" -gt "$mra_tx0"

# The three cases below do not depend on each other's timing, and their services differ: they
# run side by side (their timers, about 20 s one after the other, are most of this test).
# Pairs 1 and 2 run alone first: pair 1 must claim its REQ before the first retry, and a late
# claim would let the kernel's own MRA keep its client alive.

# A slow client: REP retries every ~70 ms (the client's CM response timeout, exponent 14),
# the RTU after 3 s, an MRA armed for the REP.  Three connections at once: the server has
# three REPs out, each answered by MRAs, and serves them in any order.
slow_clients() {
	local slow_client=(--cm-only --max-cm-retries 7 --cm-response-timeout 14 --packet-life-time 8 --mra
		--answer-delay-ms 3000 --timeout-ms 30000) apid crc=0 arc=0 i clients=()
	"${SERVER[@]}" "$CEPMCTL" accept --service-id 0x0000000001064e42 --device "$SERVER_DEV" --cm-only --count 3 \
		--timeout-ms 30000 >"$out.a3" 2>&1 &
	apid=$!
	wait_until 10 listening "$out.a3"
	for i in 1 2 3; do
		"$CEPMCTL" connect --service-id 0x0000000001064e42 "${slow_client[@]}" "${TO_SERVER[@]}" >"$out.c3.$i" 2>&1 &
		clients+=($!)
	done
	for i in "${clients[@]}"; do wait "$i" || crc=1; done
	cat "$out.c3".[123] >"$out.c3"
	wait $apid || arc=$?
	echo "$crc $arc" >"$out.r3"
}
slow_clients &
side_by_side=($!)
# An MRA sent at once, with service timeout 20, by a server that answers after 6 s.
run_pair 4 0x0000000001064e43 --mra-now --mra-timeout 20 "${slow_server[@]}" -- &
side_by_side+=($!)
# A REQ left unclaimed for 4 s, no MRA asked for: the kernel answers the retry with one.
run_pair 5 0x0000000001064e44 --claim-delay-ms 4000 --device "$SERVER_DEV" --cm-only --timeout-ms 30000 -- &
side_by_side+=($!)
wait "${side_by_side[@]}"

pair_results 3
ktap_check "three slow clients at once, each with an MRA armed for the REP, all connect" test $crc = 0
ktap_check "... and accept --count 3 serves all three through the MRAs" \
	sh -c "test $arc = 0 && grep -q '^accept: 3 connected and disconnected, 0 failed' '$out.a3'"

pair_results 4
ktap_check "a server that sends its MRA at once (service timeout 20) keeps the fast client" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q 'MRA sent for the REQ' '$out.a4'"
ktap_check "... which saw MRA_RECEIVED with service timeout 20" \
	grep -q 'event MRA_RECEIVED on CEP [0-9]* (service timeout 20)' "$out.c4"

pair_results 5
ktap_check "a REQ waiting unclaimed keeps the fast client: both ends succeed" \
	sh -c "test $crc = 0 && test $arc = 0"
ktap_check "... the client saw the kernel's MRA (service timeout 24)" \
	grep -q 'event MRA_RECEIVED on CEP [0-9]* (service timeout 24)' "$out.c5"
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
