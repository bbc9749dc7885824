#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# REQ validation: a REQ for a transport cepm does not serve (RD, reserved) or with QPN 0
# is rejected with reason 9 (Invalid Transport Type), not dropped (the peer would retry it
# for minutes) nor offered to the listener.  A REQ whose primary path names a GID the port
# does not have is rejected with reason 12 (Invalid GID; Linux's cm_req_handler puts the
# port's GID 0 in the ARI).  And a REJ whose ARI length is over 72 or whose
# MessageRejected is the reserved 3 is still heard (clamped; read as OTHER), not dropped.
#
# The hostile peer is cepmctl send-mad on rxe0's own GID, so cepm's stateless REJ comes back
# to rxe0 too.  To see its reason, each forged REQ carries the comm ID of a real CEP of ours
# waiting in REQ_SENT: the REJ (MessageRejected REQ, RemoteCommID = that comm ID) is then
# taken by that CEP, whose owner prints the reason.  Loopback.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

SID=0x0000000001064e7a
out=$CEPM_ROOT/out/cep_req_validation.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT

# A listener that would reject with 28 anything offered to it, for as long as the test may run
# (the trap ends it): a fixed 60 s can run out by check 5 in a slow KASAN guest, whose REJ
# would then be 8, no listener.
"$CEPMCTL" serve --service-id $SID --count 10 --reason 28 \
	--timeout-ms $((300000 * ${CEPM_LIMIT_SCALE:-1})) >"$out.serve" 2>&1 &
wait_until 10 file_has '^serve: listening' "$out.serve"

ktap_check "a REQ for transport RD (2) is rejected with reason 9" test "$(forged_rej rd --service-id $SID --transport 2)" = 9
ktap_check "a REQ for a reserved transport (3, extended 0) is rejected with reason 9" \
	test "$(forged_rej reserved --service-id $SID --transport 3)" = 9
ktap_check "a REQ with QPN 0 is rejected with reason 9" test "$(forged_rej qpn0 --service-id $SID --qpn 0)" = 9
ktap_check "a REQ for a GID rxe0 does not have is rejected with reason 12, not offered to the listener" \
	test "$(forged_rej badgid --service-id $SID --remote-gid ::ffff:10.99.0.1)" = 12
show_files "$out.serve"
kill $(jobs -p) 2>/dev/null
wait

# A live connection, then REJs with an ARI length of 100 and MessageRejected 3 from its peer.
hold_pair 0x0000000001064e7c "$out"
ours=$HELD_ACTIVE theirs=$HELD_PASSIVE
"$CEPMCTL" send-mad "$RXE_DEV" 1 REJ --local-comm-id "$theirs" --remote-comm-id "$ours" --msg-rejected 3 \
	--reason 27 --ari 00112233 --ari-len 100
heard() { file_has 'event REJ_RECEIVED on CEP [0-9]* \(status 27\)' "$out.connect"; }
wait_until 10 heard
show_files "$out.connect"
ktap_check "a REJ with ARI length 100 and MessageRejected 3 from the peer is heard, not dropped" heard
still_established() { "$CEPMCTL" list | awk -v id="$theirs" '$1 == id { print $2 }' | grep -qx ESTABLISHED; }
ktap_check "... by the active side only: the passive side is still ESTABLISHED" still_established
kill $(jobs -p) 2>/dev/null
wait
ktap_finished
