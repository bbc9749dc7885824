#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Service ID Resolution: a UD server answers a SIDR_REQ with its QPN and Q_Key, locally and
# across the veth pair to the namespace cepm_peer; a service nobody serves gets status 1
# (Linux's stateless answer); a server may also refuse (status 2).  A SIDR_REP lost on the
# way is sent again, from the port's memory of its answers, when the request is retried:
# the retry must not reach the listener as a new request, nor a listener that is gone.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 11

out=$CEPM_ROOT/out/cep_sidr.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; drop_rx 0 0; ipv6_down; ip addr del fd78::1/64 dev veth0 2>/dev/null; peer_ns_down; rm -f "$out".*' EXIT
listening() { file_has '^serve-ud: listening' "$1"; }

"$CEPMCTL" serve-ud --service-id 0x0000000001114e60 --qpn 0x4242 --qkey 0x11111111 >"$out.s1" 2>&1 &
spid=$!
wait_until 10 listening "$out.s1"
"$CEPMCTL" resolve --service-id 0x0000000001114e60 >"$out.r1" 2>&1
rrc=$?
wait $spid
src=$?
show_files "$out.s1" "$out.r1"
ktap_check "local SIDR: status 0, the server's QPN and Q_Key" \
	sh -c "test $rrc = 0 && test $src = 0 && grep -q 'status 0, QPN 0x4242, Q_Key 0x11111111' '$out.r1'"

"$CEPMCTL" resolve --service-id 0x0000000001114e61 >"$out.r2" 2>&1
show_files "$out.r2"
ktap_check "a service nobody serves: status 1 (unsupported)" grep -q 'status 1, QPN 0x0' "$out.r2"

"$CEPMCTL" serve-ud --service-id 0x0000000001114e62 --qpn 0x4242 --status 2 >"$out.s3" 2>&1 &
spid=$!
wait_until 10 listening "$out.s3"
"$CEPMCTL" resolve --service-id 0x0000000001114e62 >"$out.r3" 2>&1
wait $spid
show_files "$out.r3"
ktap_check "a server that refuses: status 2" grep -q 'status 2,' "$out.r3"

# The server answers once and exits; its SIDR_REP is lost (the first one received is dropped),
# so the requester retries its SIDR_REQ.
"$CEPMCTL" serve-ud --service-id 0x0000000001114e64 --qpn 0x4343 --qkey 0x33333333 >"$out.s5" 2>&1 &
spid=$!
wait_until 10 listening "$out.s5"
dropped0=$(rx_dropped)
drop_rx 0x18 1
# A short retry timer (2 x 4 us x 2^8 + 4 us x 2^18, about 1.07 s) instead of the default
# lifetime 16 and timeout 20 (4.6 s): the same retry, sooner.
"$CEPMCTL" resolve --service-id 0x0000000001114e64 --cm-response-timeout 18 --packet-life-time 8 \
	--timeout-ms 20000 >"$out.r5" 2>&1
rrc=$?
wait $spid
show_files "$out.s5" "$out.r5"
ktap_check "the server's SIDR_REP was lost" test "$(rx_dropped)" = $((dropped0 + 1))
ktap_check "... and the retry got the same answer: status 0, QPN 0x4343, Q_Key 0x33333333" \
	sh -c "test $rrc = 0 && grep -q 'status 0, QPN 0x4343, Q_Key 0x33333333' '$out.r5'"

ktap_check "second host up (rxe1 in namespace $PEER_NS)" peer_ns_up
ip netns exec $PEER_NS "$CEPMCTL" serve-ud --device rxe1 --service-id 0x0000000001114e63 --qpn 0x777 --qkey 0x2222 \
	>"$out.s4" 2>&1 &
spid=$!
wait_until 10 listening "$out.s4"
"$CEPMCTL" resolve --device rxe0 --service-id 0x0000000001114e63 --peer-ip 10.77.0.2 --peer-mac "$PEER_MAC" >"$out.r4" 2>&1
rrc=$?
wait $spid
show_files "$out.s4" "$out.r4"
ktap_check "SIDR across the veth pair to rxe1" sh -c "test $rrc = 0 && grep -q 'status 0, QPN 0x777, Q_Key 0x2222' '$out.r4'"

# Two requesters whose GIDs differ in their prefix only (fd77::2 and fd78::2, both rxe1's: an
# interface ID shared, as by hosts with ::2 on two subnets, or by a peer that copies a
# victim's) send a SIDR_REQ each, with the same request ID, for one service. Each is a
# request of its own: once the first is answered, the second is not taken for its retry and
# sent its kept answer (the port's ring of answers); while the first waits unclaimed, the
# second waits beside it, not dropped as its duplicate (the SIDR table). Linux's
# `cm_insert_remote_sidr` keys the requester's LID, which RoCE lacks, so there two such
# requests waiting at once are one.
sid6=0x0000000001114e66
two_prefixes_up() {
	ipv6_up "${PEER[@]}" &&
		ip addr add fd78::1/64 dev veth0 nodad &&
		"${PEER[@]}" ip addr add fd78::2/64 dev veth1 nodad &&
		wait_until 20 has_gid rxe0 fd78:0000:0000:0000:0000:0000:0000:0001 &&
		wait_until 20 has_gid rxe1 fd78:0000:0000:0000:0000:0000:0000:0002
}
ktap_check "GIDs fd77::2 and fd78::2 on rxe1, fd77::1 and fd78::1 on rxe0" two_prefixes_up
# serve_twice OUT: a server for $sid6 that answers two SIDR_REQs, its output in OUT and its
# PID in $spid, once it listens.
serve_twice() {
	"$CEPMCTL" serve-ud --device rxe0 --service-id $sid6 --qpn 0x666 --qkey 0x6666 --answers 2 \
		--timeout-ms 20000 >"$1" 2>&1 &
	spid=$!
	wait_until 10 listening "$1"
}
# sidr_req_from PREFIX ID: the peer's SIDR_REQ ID for $sid6, from PREFIX::2 to PREFIX::1.
sidr_req_from() {
	"${PEER[@]}" "$CEPMCTL" send-mad rxe1 1 SIDR_REQ --from-gid "$1::2" --to-gid "$1::1" \
		--comm-id "$2" --service-id $sid6
}
serve_twice "$out.s6"
reps0=$(tx SIDR_REP)
sidr_req_from fd77 0x5151
wait_until 10 counter_is tx SIDR_REP $((reps0 + 1))
sidr_req_from fd78 0x5151
wait $spid
src=$?
show_files "$out.s6"
ktap_check "same request ID from fd77::2 and fd78::2: the server answered both" \
	sh -c "test $src = 0 && grep -q 'answered 2 SIDR_REQ' '$out.s6'"
# Both at once: the server is stopped before they come, so both wait in its backlog.
serve_twice "$out.s7"
kill -STOP $spid
reqs0=$(rx SIDR_REQ)
sidr_req_from fd77 0x5252
sidr_req_from fd78 0x5252
wait_until 10 counter_is rx SIDR_REQ $((reqs0 + 2))
mad_barrier
waiting=$(backlog_of $sid6)
kill -CONT $spid
wait $spid
src=$?
show_files "$out.s7"
ktap_check "... both at once, with request ID 0x5252: $waiting waited for the server, which answered both" \
	sh -c "test '$waiting' = 2 && test $src = 0 && grep -q 'answered 2 SIDR_REQ' '$out.s7'"
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
