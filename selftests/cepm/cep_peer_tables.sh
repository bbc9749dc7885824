#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The remote-ID and remote-QPN tables follow the connection, not the CEP (Linux:
# cm_reset_to_idle, cm_enter_timewait, and cm_rep_handler's cm_insert_remote_id):
#  1. a passive CEP rejected by its owner and kept open (IDLE) no longer holds its peer's QPN:
#     a new REQ from that QP is rejected by the server (REJ 28), not as stale (REJ 10);
#  2. the active side is findable by its peer's (comm ID, CA GUID) once the REP arrives: a
#     timeout REJ (reason 4, the CA GUID in its ARI) from the passive side reaches it;
#  3. a REP that claims a (comm ID, CA GUID) another connection already has is a duplicate
#     and is dropped: the CEP that sent the REQ stays in REQ_SENT;
#  4. SIDR requests have a table of their own (Linux's remote_sidr_table): a SIDR_REQ waiting
#     in a backlog does not make a REQ with the same (ID, GUID) look like a duplicate;
#  5. the answers kept for SIDR_REQ retries are per service: the same request ID for another
#     service is a new request.
# A hostile peer is cepmctl send-mad (ib_umad).  Loopback on rxe0.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 10

SID=0x0000000001064e74
SID2=0x0000000001064e75
out=$CEPM_ROOT/out/cep_peer_tables.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT
node_guid=0x$(tr -d ':' </sys/class/infiniband/$RXE_DEV/node_guid)

# 1. serve rejects both REQs and keeps the rejected CEPs; both connects come from the same
#    (made-up, CM-only) QPN, given with --qpn.
"$CEPMCTL" serve --service-id $SID --count 2 --keep-rejected --reason 28 --timeout-ms 30000 >"$out.serve" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve"
"$CEPMCTL" connect --service-id $SID --cm-only --qpn 0x00c0de --timeout-ms 20000 >"$out.c1" 2>&1
kept() { file_has 'serve: keeping CEP [0-9]* in IDLE' "$out.serve"; }
wait_until 10 kept
ktap_check "the first REQ is rejected with 28 and its CEP kept in IDLE" \
	sh -c "grep -q 'got REJ_RECEIVED (status 28)' '$out.c1' && grep -q 'keeping CEP [0-9]* in IDLE' '$out.serve'"
"$CEPMCTL" connect --service-id $SID --cm-only --qpn 0x00c0de --timeout-ms 20000 >"$out.c2" 2>&1
show_files "$out.c1" "$out.c2"
ktap_check "a second REQ from the same QP is rejected by the server (28), not as stale (10)" \
	grep -q 'got REJ_RECEIVED (status 28)' "$out.c2"
kill $spid 2>/dev/null
wait $spid 2>/dev/null
show_files "$out.serve"

# 2. An established connection; the passive side's "timeout REJ" to the active side.
hold_pair $SID2 "$out"
ours=$HELD_ACTIVE theirs=$HELD_PASSIVE
ktap_check "a connection is established (active comm ID $ours, passive $theirs)" \
	sh -c "test -n '$ours' && test -n '$theirs'"

# 3 first, while the connection is up: a REQ to nowhere, then a REP for it that claims the
#    passive side's IDs.
nowhere=("${NOWHERE[@]}")
"$CEPMCTL" connect --service-id 0x0000000001064e76 --cm-only --timeout-ms 60000 "${nowhere[@]}" >"$out.req" 2>&1 &
wait_until 20 list_has_state REQ_SENT
c3=$("$CEPMCTL" list | awk '$2 == "REQ_SENT" { print $1; exit }')
rep0=$(rx REP)
"$CEPMCTL" send-mad "$RXE_DEV" 1 REP --local-comm-id "$theirs" --remote-comm-id "$c3" --ca-guid "$node_guid" --qpn 0x4321
mad_barrier
state_of() { "$CEPMCTL" list | awk -v id="$1" '$1 == id { print $2 }'; }
ktap_check "cepm received the duplicate REP" test "$(rx REP)" -gt "$rep0"
ktap_check "... and dropped it: CEP $c3 is still in REQ_SENT" test "$(state_of "$c3")" = REQ_SENT

"$CEPMCTL" send-mad "$RXE_DEV" 1 REJ --local-comm-id "$theirs" --remote-comm-id 0 --msg-rejected OTHER \
	--reason 4 --ari "${node_guid#0x}"
timeout_rej() { file_has 'event REJ_RECEIVED on CEP [0-9]* \(status 4\)' "$out.connect"; }
wait_until 10 timeout_rej
show_files "$out.accept" "$out.connect"
ktap_check "the timeout REJ, matched by the passive side's comm ID and CA GUID, reached the active side" timeout_rej
ktap_check "... and not the passive side" sh -c "! grep -q 'REJ_RECEIVED' '$out.accept'"
kill $(jobs -p) 2>/dev/null
wait

# 4. A SIDR_REQ left unclaimed, from request ID 0x51d0: its key pairs the ID with the
#    sender's GID (rxe0's, ::ffff:10.77.0.1), which stands in for a CA GUID.  Then a REQ
#    from comm ID 0x51d0 whose CA GUID is that GID's low half, to the same listener: a key
#    made of the low half alone would take the two for one; the key's table keeps them apart.
SID4=0x0000000001064e77
"$CEPMCTL" serve --service-id $SID4 --reason 28 --timeout-ms 20000 >"$out.serve4" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve4"
"$CEPMCTL" send-mad "$RXE_DEV" 1 SIDR_REQ --service-id $SID4 --local-comm-id 0x51d0
wait_until 10 file_has 'event SIDR_REQ_RECEIVED' "$out.serve4"
ktap_check "a SIDR_REQ waits unclaimed in the listener's backlog" grep -q 'event SIDR_REQ_RECEIVED' "$out.serve4"
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --service-id $SID4 --local-comm-id 0x51d0 --ca-guid 0x0000ffff0a4d0001
wait $spid
show_files "$out.serve4"
ktap_check "a REQ with the same ID and GUID is a new request, not a duplicate of the SIDR_REQ" \
	grep -q "serve: REQ from comm ID 0x51d0 .* for $SID4" "$out.serve4"

# 5. The answers a port keeps for SIDR_REQ retries (port/sidr_answers.rs) are per service: a
#    SIDR_REQ from request ID 0x5a5a answered for one service, then one with the same ID for
#    another service, which is a new request that its own listener must hear.
SID5A=0x0000000001114e78
SID5B=0x0000000001114e79
"$CEPMCTL" serve --service-id $SID5A --timeout-ms 20000 >"$out.serve5a" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve5a"
"$CEPMCTL" send-mad "$RXE_DEV" 1 SIDR_REQ --service-id $SID5A --local-comm-id 0x5a5a
wait $spid
"$CEPMCTL" serve --service-id $SID5B --timeout-ms 20000 >"$out.serve5b" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve5b"
"$CEPMCTL" send-mad "$RXE_DEV" 1 SIDR_REQ --service-id $SID5B --local-comm-id 0x5a5a
wait_until 10 file_has 'answered the SIDR_REQ' "$out.serve5b"
kill $spid 2>/dev/null
wait $spid 2>/dev/null
show_files "$out.serve5a" "$out.serve5b"
ktap_check "request ID 0x5a5a answered for service $SID5A, then sent to $SID5B: its listener answers it" \
	sh -c "grep -q 'answered the SIDR_REQ' '$out.serve5a' && grep -q 'answered the SIDR_REQ' '$out.serve5b'"
ktap_finished
