#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Races made deterministic by losing chosen MADs (cepm's debugfs fault injection drops the
# next N received MADs of one attribute, as a lossy wire would; netem cannot reach rxe's
# loopback):
#  - crossing DREQs: both ends disconnect at once and both DREQs are lost; the first retry
#    meets a CEP in DREQ_SENT, which answers it with a DREP; both ends leave timewait;
#  - a lost RTU: the server's REP is retried, the client answers the duplicate REP with its
#    RTU again, and the server is established exactly once;
#  - a duplicate REQ: a server slower than the client's REQ timeout gets the REQ's retries
#    while it thinks, counts them as duplicates, and is established exactly once;
#  - a lost RTU with ESTABLISH (IB_EVENT_COMM_EST): established at once, the REP never resent.
# The client runs --hold and the server disconnects, so nothing but the event under test can
# establish or end a connection.  Loopback, or with the server in another namespace.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 15

out=$CEPM_ROOT/out/cep_races.$$
trap 'drop_rx 0 0; topology_down; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$out.$1.accept"; }
# lib.sh's tx and rx count on the client's port (rxe0).  The MAD layer's retries of one post
# are not counted as sends; every arrival is counted as received.
duplicates() { "$CEPMCTL" ports | sed -n "/^$1 port 1 /,/^[^ ]/s/^  duplicates: //p"; }
events() { grep -c "event $2 " "$out.$1"; }
# About 270 ms per try (exponent 16): quick retries, but slow enough for a TCG guest.
quick=(--cm-only --max-cm-retries 15 --cm-response-timeout 16 --packet-life-time 8 --timeout-ms 30000)

run() { # run NAME SERVICE_ID [accept options]: a client and a server, both must succeed
	local name=$1 sid=$2
	shift 2
	"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id "$sid" "${quick[@]}" "$@" >"$out.$name.accept" 2>&1 &
	local apid=$!
	wait_until 10 listening "$name"
	"$CEPMCTL" connect --service-id "$sid" "${quick[@]}" --hold "${TO_SERVER[@]}" >"$out.$name.connect" 2>&1
	local crc=$?
	wait $apid
	local arc=$?
	show_files "$out.$name.accept" "$out.$name.connect"
	[ $crc = 0 ] && [ $arc = 0 ]
}

ktap_check "topology $TOPOLOGY is up" topology_up
ktap_check "fault injection is available" test -w $CEPM_DEBUGFS/drop_rx_count

# Crossing DREQs: the client's --hold ends with the server's DREQ; for the client to send its
# own DREQ as well, it runs without --hold here.
dropped0=$(rx_dropped)
drop_rx 0x15 2
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id 0x0000000001064e60 "${quick[@]}" --disconnect \
	>"$out.cross.accept" 2>&1 &
apid=$!
wait_until 10 listening cross
"$CEPMCTL" connect --service-id 0x0000000001064e60 "${quick[@]}" "${TO_SERVER[@]}" >"$out.cross.connect" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.cross.accept" "$out.cross.connect"
ktap_check "crossing DREQs: both ends sent a DREQ and both finished" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q 'DREQ sent' '$out.cross.accept' && grep -q 'DREQ sent' '$out.cross.connect'"
ktap_check "... both DREQs were lost once" rx_dropped_is $((dropped0 + 2))
ktap_check "... a DREQ reached an end in DREQ_SENT, which answered it with a DREP" \
	sh -c "grep -h -A1 'DREQs crossed' '$out.cross.accept' '$out.cross.connect' | grep -q 'DREP sent'"
ktap_check "... both ends left timewait" \
	sh -c "grep -q 'event TIMEWAIT_EXIT' '$out.cross.accept' && grep -q 'event TIMEWAIT_EXIT' '$out.cross.connect'"

# A lost RTU.
dropped0=$(rx_dropped) rep0=$(rx REP) rtu0=$(tx RTU)
drop_rx 0x14 1
ktap_check "lost RTU: client and server finish" run rtu 0x0000000001064e61 --disconnect
ktap_check "... the RTU was lost, the REP arrived again, and the RTU was sent again" \
	sh -c "test $(rx_dropped) = $((dropped0 + 1)) && test $(rx REP) -ge $((rep0 + 2)) && test $(tx RTU) -ge $((rtu0 + 2))"
ktap_check "... the server was established exactly once" test "$(events rtu.accept ESTABLISHED)" = 1

# A duplicate REQ: the server answers after 1.5 s, the client retries every ~270 ms.
dup0=$(duplicates "$SERVER_DEV")
ktap_check "duplicate REQ: client and server finish" run dup 0x0000000001064e62 --disconnect --answer-delay-ms 1500
ktap_check "... the server counted the REQ's retries as duplicates" test "$(duplicates "$SERVER_DEV")" -gt "${dup0:-0}"
ktap_check "... one REQ claimed, one REP received, one ESTABLISHED" \
	sh -c "test \$(grep -c 'REQ claimed' '$out.dup.accept') = 1 && test $(events dup.connect REP_RECEIVED) = 1 &&
	       test $(events dup.accept ESTABLISHED) = 1"

# ESTABLISH with the RTU lost: the REP goes out once, its retries cancelled.
dropped0=$(rx_dropped) rep0=$(rx REP)
drop_rx 0x14 1
ktap_check "ESTABLISH before the (lost) RTU: client and server finish" run est 0x0000000001064e63 --disconnect --establish-early
ktap_check "... established once, the REP arrived once (its retries cancelled), the RTU lost" \
	sh -c "test $(events est.accept ESTABLISHED) = 1 && test $(rx REP) = $((rep0 + 1)) && test $(rx_dropped) = $((dropped0 + 1))"
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
