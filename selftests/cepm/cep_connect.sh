#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A whole connection through cepm: cepmctl accept listens (on the server's host), cepmctl
# connect sends the REQ; REP, RTU, QPs moved INIT -> RTR -> RTS with the attributes cepm
# derives (the passive QP in RTR before its REP leaves), then a verified RC ping-pong over the
# QPs.  Over rxe0 alone (loopback) or from rxe0 to rxe1 in another namespace (two-hosts).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 16

modprobe ib_uverbs
SID=0x0000000001064e22
out=$CEPM_ROOT/out/cep_connect.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$out.accept"; }

ktap_check "topology $TOPOLOGY is up" topology_up
# A monitor sees every event of every CEP, whichever process owns it.
"$CEPMCTL" events >"$out.events" 2>&1 &
epid=$!
wait_until 10 file_has '^events: monitoring' "$out.events"
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --iterations 20 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --service-id $SID --iterations 20 "${TO_SERVER[@]}" >"$out.connect" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.accept" "$out.connect"

ktap_check "connect succeeded" test $crc = 0
ktap_check "accept succeeded" test $arc = 0
ktap_check "the passive side saw the REQ's private data" grep -q 'private data "cepmctl connect"' "$out.accept"
ktap_check "the active side saw the REP's private data" grep -q 'REP private data .*"cepmctl accept"' "$out.connect"
ktap_check "the passive QP was in RTR before the REP was sent" grep -q 'in RTR before the REP is sent' "$out.accept"
ktap_check "both CEPs reached ESTABLISHED" \
	sh -c "grep -q 'in ESTABLISHED' '$out.accept' && grep -q 'in ESTABLISHED' '$out.connect'"
ktap_check "20 round trips of 4096 bytes verified over the connected QPs" \
	grep -q 'client: 20 iterations x 4096 bytes, .* verified 81920 bytes' "$out.connect"
ktap_check "the passive side got the DREQ with its private data and answered" \
	sh -c "grep -q 'DREQ private data \"bye\"' '$out.accept' && grep -q 'DREP sent' '$out.accept'"
ktap_check "the active side got the DREP" grep -q 'event DREP_RECEIVED' "$out.connect"
# 7 events: the listener's REQ_RECEIVED, 3 on each end.  Let the monitor print them all.
events_seen() { grep -c ' -> ' "$out.events"; }
all_seen() { [ "$(events_seen)" -ge 7 ]; }
wait_until 10 all_seen
kill $epid
wait $epid 2>/dev/null
show_files "$out.events"
# Each end's events name the peer's comm ID.
saw() { file_has "events: .* peer 0x[1-9a-f][0-9a-f]* service $(printf '%#x' $SID): $1 \(status 0\) -> $2\$" "$out.events"; }
saw_all() {
	grep -q "events: .* service $(printf '%#x' $SID): REQ_RECEIVED (status 0) -> LISTEN\$" "$out.events" &&
		saw REP_RECEIVED REP_RCVD && saw ESTABLISHED ESTABLISHED && saw DREQ_RECEIVED DREQ_RCVD &&
		saw DREP_RECEIVED TIMEWAIT && saw TIMEWAIT_EXIT IDLE
}
ktap_check "cepmctl events saw the listener's REQ_RECEIVED and both ends' events, with the peer's comm ID" saw_all
ktap_check "... exactly 7 events, none lost" sh -c "test $(events_seen) = 7 && ! grep -q lost '$out.events'"
ktap_check "both sides left timewait and are idle again" \
	sh -c "grep -q 'event TIMEWAIT_EXIT' '$out.accept' && grep -q 'event TIMEWAIT_EXIT' '$out.connect' &&
	       grep -q 'in IDLE' '$out.accept' && grep -q 'in IDLE' '$out.connect'"

# Nobody listens on this service ID: the stock REJ 8 comes back and reaches the user.
"$CEPMCTL" connect --service-id 0x0000000001064e23 --iterations 0 "${TO_SERVER[@]}" >"$out.rej" 2>&1
rc=$?
show_files "$out.rej"
ktap_check "connect to an unlistened service fails with REJ reason 8 (Invalid Service ID)" \
	sh -c "test $rc != 0 && grep -q 'got REJ_RECEIVED (status 8)' '$out.rej'"

# A server that rejects with the most private data a REJ carries (148 bytes).
max_pdata=$(printf 'r%.0s' $(seq 148))
"${SERVER[@]}" "$CEPMCTL" serve --service-id 0x0000000001064e2c --reason 28 --reject-data "$max_pdata" >"$out.serve" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve"
"$CEPMCTL" connect --service-id 0x0000000001064e2c --cm-only "${TO_SERVER[@]}" >"$out.rej148" 2>&1
wait $spid
sed 's/^/# /' "$out.serve" "$out.rej148" | cut -c1-160
ktap_check "a REJ with 148 bytes of private data reaches the active side whole (reason 28)" \
	grep -q "got REJ_RECEIVED (status 28), 148 bytes of private data \"$max_pdata\"" "$out.rej148"
ktap_check "no CEP is left in the module" test "$(live_ceps)" = 0
ktap_finished
