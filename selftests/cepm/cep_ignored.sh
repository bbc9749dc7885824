#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A MAD that names a CEP but that the CEP does not take changes nothing of it, and what it is
# owed is answered as Linux's cm.c answers it.  A hostile peer (cepmctl send-mad, through
# ib_umad) on rxe0:
#  1. after a REP, an MRA, an RTU and a DREP with the REP's comm IDs, which REP_RCVD ignores
#     (cm_mra_handler, cm_rtu_handler, cm_drep_handler): the owner, reading REP_RECEIVED
#     late, still gets the REP's private data;
#  2. after a REJ, a second REJ and an MRA with the same IDs, which IDLE ignores: the owner
#     still gets the first REJ's private data;
#  3. a REP that names an established CEP but not its peer's comm ID is no duplicate of that
#     peer's REP (cm_dup_rep_handler acquires the CEP by both IDs): no RTU answers it, on
#     either end; the peer's own duplicate REP is still answered with the RTU again;
#  4. a DREQ whose sender's comm ID is not the CEP's peer's gets the stateless DREP
#     (cm_dreq_handler's cm_issue_drep when cm_acquire_id finds nothing), and the connection
#     stays up.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 8

out=$CEPM_ROOT/out/cep_ignored.$$
trap 'kill -CONT $(jobs -p) 2>/dev/null; kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT
send() { "$CEPMCTL" send-mad "$RXE_DEV" 1 "$@"; }
# A REQ to a host that does not answer: its CEP waits in REQ_SENT for what the test sends.
nowhere=("${NOWHERE[@]}")
# start_client FILE SID: such a client, stopped once its CEP is in REQ_SENT; its CEP's ID in $c.
start_client() {
	"$CEPMCTL" connect --service-id "$2" --cm-only --timeout-ms 60000 "${nowhere[@]}" >"$1" 2>&1 &
	client=$!
	wait_until 20 list_has_state REQ_SENT
	c=$("$CEPMCTL" list | awk '$2 == "REQ_SENT" { print $1; exit }')
	kill -STOP $client
}
# finish_client FILE [LINE]: the client goes on and reads what waits for it; it ends by itself,
# or is stopped once FILE has LINE (an established one would wait for the nowhere's DREP).
finish_client() {
	kill -CONT $client
	if [ $# -gt 1 ]; then
		wait_until 20 file_has "$2" "$1"
		kill $client
	fi
	wait $client
}

# 1. The REP, then three messages REP_RCVD ignores, while the client is stopped.
start_client "$out.c1" 0x0000000001064e90
send REP --local-comm-id 0xabc0 --remote-comm-id "$c" --qpn 0x4321 --private-data GENUINE-REP
send MRA --local-comm-id 0xabc0 --remote-comm-id "$c" --msg-rejected REP --private-data SPOOFED-MRA
send RTU --local-comm-id 0xabc0 --remote-comm-id "$c" --private-data SPOOFED-RTU
send DREP --local-comm-id 0xabc0 --remote-comm-id "$c" --private-data SPOOFED-DREP
mad_barrier
finish_client "$out.c1" 'REP private data'
show_files "$out.c1"
ktap_check "REP_RECEIVED read after an MRA, an RTU and a DREP it ignored: the REP's private data" \
	grep -q 'REP private data ([0-9]* bytes, attribute 0x13): "GENUINE-REP"' "$out.c1"

# 2. A REJ, then a second REJ and an MRA, which IDLE ignores.
start_client "$out.c2" 0x0000000001064e91
send REJ --local-comm-id 0xabc1 --remote-comm-id "$c" --msg-rejected REQ --reason 28 --private-data GENUINE-REJ
send REJ --local-comm-id 0xabc1 --remote-comm-id "$c" --msg-rejected REQ --reason 28 --private-data SPOOFED-REJ
send MRA --local-comm-id 0xabc1 --remote-comm-id "$c" --msg-rejected REQ --private-data SPOOFED-MRA
mad_barrier
finish_client "$out.c2"
show_files "$out.c2"
ktap_check "REJ_RECEIVED read after a REJ and an MRA it ignored: the first REJ's private data" \
	grep -q 'got REJ_RECEIVED (status 28), [0-9]* bytes of private data "GENUINE-REJ"' "$out.c2"

# 3 and 4: a CM-only connection, both ends holding it until their next event.
SID=0x0000000001064e92
hold_pair $SID "$out"
active=$HELD_ACTIVE passive=$HELD_PASSIVE
ktap_check "a connection is established (active comm ID $active, passive $passive)" \
	sh -c "test -n '$active' && test -n '$passive' && test $(established_ceps) = 2"

rtu0=$(tx RTU)
# Each end, named by a sender that is not its peer; then the active end by its peer.
send REP --local-comm-id $((active ^ 1)) --remote-comm-id "$passive" --qpn 0x4321
send REP --local-comm-id $((passive ^ 1)) --remote-comm-id "$active" --qpn 0x4321
send REP --local-comm-id "$passive" --remote-comm-id "$active" --qpn 0x4321
wait_until 10 counter_reaches tx RTU $((rtu0 + 1))
mad_barrier
ktap_check "REPs from senders that are not the peer get no RTU, the peer's duplicate one: $(($(tx RTU) - rtu0)) RTU(s) sent" \
	test "$(tx RTU)" = $((rtu0 + 1))

drep0=$(tx DREP)
send DREQ --local-comm-id $((active ^ 1)) --remote-comm-id "$passive" --qpn 0x4321
mad_barrier
ktap_check "a DREQ from a sender that is not the peer gets the stateless DREP ($(($(tx DREP) - drep0)) sent)" \
	test "$(tx DREP)" = $((drep0 + 1))
ktap_check "... and both ends are still ESTABLISHED" test "$(established_ceps)" = 2
show_files "$out.accept" "$out.connect"

ktap_check "no event reached either end of the connection" \
	sh -c "! grep -q 'event DREQ_RECEIVED\|event REJ_RECEIVED' '$out.accept' '$out.connect'"
kill $(jobs -p) 2>/dev/null
wait
ktap_check "no CEP is left" wait_until 20 ceps_are 0
ktap_finished
