#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Message details as Linux sends them: private data belongs to one message.  The RTU's
# private data must not ride on the DREQ that destroying the connection sends
# (Linux's cm_destroy_id sends that DREQ with none).  And cepmctl draws its starting PSNs at
# random, as rdma_cm does (a fixed PSN lets an old packet be taken for a new one).
# Loopback, or with the server in another namespace.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

SID=0x0000000001064e78
out=$CEPM_ROOT/out/cep_message_details.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up

"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --cm-only --timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.accept"
"$CEPMCTL" connect --service-id $SID --cm-only --hold --rtu-data "the RTU's own words" --timeout-ms 30000 \
	"${TO_SERVER[@]}" >"$out.connect" 2>&1 &
cpid=$!
held() { file_has 'RTU sent; CEP [0-9]* in ESTABLISHED' "$out.connect" && file_has 'in ESTABLISHED' "$out.accept"; }
wait_until 20 held
ktap_check "a connection is established, the RTU carrying private data" held
# The client goes away: closing its file destroys the CEP, which sends a DREQ.
kill -KILL $cpid
wait $cpid 2>/dev/null
wait $apid
arc=$?
show_files "$out.connect" "$out.accept"
ktap_check "the server got the DREQ of the destroyed client and answered it" \
	sh -c "test $arc = 0 && grep -q 'DREP sent' '$out.accept'"
ktap_check "... and that DREQ carried no private data (not the RTU's)" \
	grep -q 'DREQ private data ""' "$out.accept"

# A second connection: its PSNs are not the first one's.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --cm-only --timeout-ms 30000 >"$out.accept2" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.accept2"
"$CEPMCTL" connect --service-id $SID --cm-only --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.connect2" 2>&1
wait $apid
psns() { sed -n 's/.*(send PSN \(0x[0-9a-f]*\), receive PSN \(0x[0-9a-f]*\).*/\1 \2/p' "$1"; }
first=$(psns "$out.connect") second=$(psns "$out.connect2")
ktap_print_msg "PSNs (send, receive): first connection $first, second $second"
ktap_check "the two connections start at different PSNs" \
	sh -c "test -n '$first' && test -n '$second' && test '$first' != '$second'"
ktap_finished
