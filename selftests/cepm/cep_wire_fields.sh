#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Header and REP fields as Linux's CM sends them, seen on the wire (veth0, dissected by tshark):
#  - a reply carries the TID of the request it answers: the REP, RTU, MRA and REJ that of the
#    REQ, the DREP that of the DREQ (Linux's cm_req_handler and cm_dreq_handler keep the
#    request's TID in cm_id_priv->tid; cm_format_rep, cm_format_rtu, cm_format_mra,
#    cm_format_rej and cm_format_drep put it back);
#  - the REP's TargetAckDelay is the device's local CA ACK delay, set by the kernel
#    (cm_format_rep), not whatever the user passed;
#  - a REQ on a path of more than one hop (RoCE's, hop limit 64) carries the permissive LID
#    0xFFFF as both port LIDs, and SubnetLocal 0 (cm_format_req);
#  - a REQ whose primary path names a GID the port does not have gets REJ 12 with the port's
#    GID 0 in its 16-byte ARI (cm_req_handler);
#  - a DREQ the CEP ignores does not become the TID its later answers carry (cm_dreq_handler
#    keeps a DREQ's TID only when it takes it): neither one with the wrong QPN (the RTU that
#    answers a duplicate REP after it still carries the REQ's), nor one that reaches a
#    client in REQ_SENT (its RTU, once the REP comes, carries the REQ's).
# The server runs on rxe1 in the peer namespace, the client on rxe0: a connection and its
# disconnect, a REQ refused with REJ 28, a REQ answered at once with an MRA, a held connection
# whose client gets a forged DREQ and REP (cepmctl send-mad on rxe0, which loops them back
# unseen by the capture), and a REQ forged on rxe0 (send-mad --to-gid) for a GID rxe1 does
# not have.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology (a capture on veth0)"; exit "$KSFT_SKIP"; }
ktap_set_plan 10

SID1=0x0000000001064e7a SID2=0x0000000001064e7b SID3=0x0000000001064e7c SID4=0x0000000001064e7d
SID5=0x0000000001064e7e SID6=0x0000000001064e7f
# ib_umad puts its agent's own high 32 bits into a request's TID: the low half names it.
IGNORED_DREQ_TID=0x000000007e57d1ee EARLY_DREQ_TID=0x000000007e57d2ee
out=$CEPM_ROOT/out/cep_wire_fields.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up

dumpcap -i veth0 -f "udp port 4791" -w "$out.pcap" >"$out.dumpcap" 2>&1 &
tpid=$!
wait_until 30 file_has "Capturing on" "$out.dumpcap"
# Every REJ rxe0 sends or receives from now on crosses veth0 (the stop waits for them below).
rejs_before_capture=$(($(rx REJ) + $(tx REJ)))

# pair SID SERVER_ARGS... -- CLIENT_ARGS...: accept on the server, connect from rxe0.
pair() {
	local sid=$1 server=() client=()
	shift
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	client=("$@")
	"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id "$sid" --cm-only --timeout-ms 30000 \
		"${server[@]}" >"$out.a$sid" 2>&1 &
	local apid=$!
	wait_until 10 file_has '^accept: listening' "$out.a$sid"
	"$CEPMCTL" connect --service-id "$sid" --cm-only --timeout-ms 30000 "${TO_SERVER[@]}" "${client[@]}" \
		>"$out.c$sid" 2>&1
	wait $apid
	show_files "$out.a$sid" "$out.c$sid"
}
pair $SID1 --
pair $SID2 --rdma-cm --
pair $SID3 --mra-now --
ktap_check "a REQ was refused (REJ 28) by a server that wants rdma_cm's header" \
	grep -q 'got REJ_RECEIVED (status 28)' "$out.c$SID2"
ktap_check "a server sent its MRA at once" grep -q 'MRA sent for the REQ' "$out.a$SID3"
# The held connection: its client CEP (rxe0) gets a DREQ from its peer's comm ID for another
# QPN, which it ignores, then a duplicate REP, which it answers with its RTU again, to rxe1.
hold_pair $SID5 "$out.held"
rtus_before=$(tx RTU)
"$CEPMCTL" send-mad "$RXE_DEV" 1 DREQ --local-comm-id "$HELD_PASSIVE" --remote-comm-id "$HELD_ACTIVE" \
	--qpn 0x4321 --tid $IGNORED_DREQ_TID
"$CEPMCTL" send-mad "$RXE_DEV" 1 REP --local-comm-id "$HELD_PASSIVE" --remote-comm-id "$HELD_ACTIVE"
rtu_resent=0
wait_until 10 counter_reaches tx RTU $((rtus_before + 1)) && rtu_resent=1
kill "${HELD_PIDS[@]}" 2>/dev/null
wait "${HELD_PIDS[@]}" 2>/dev/null
show_files "$out.held.accept" "$out.held.connect"
# A client in REQ_SENT, its server answering 3 s late, gets a DREQ for its QP before any REP
# (LocalCommID 0), which REQ_SENT ignores.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID6 --cm-only --answer-delay-ms 3000 \
	--timeout-ms 30000 >"$out.a$SID6" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.a$SID6"
"$CEPMCTL" connect --service-id $SID6 --cm-only --qpn 0x00c1 --timeout-ms 30000 "${TO_SERVER[@]}" \
	>"$out.c$SID6" 2>&1 &
cpid=$!
wait_until 10 list_has_state REQ_SENT
early_client=$("$CEPMCTL" list | awk '$2 == "REQ_SENT" { print $1; exit }')
"$CEPMCTL" send-mad "$RXE_DEV" 1 DREQ --local-comm-id 0 --remote-comm-id "$early_client" --qpn 0x00c1 \
	--tid $EARLY_DREQ_TID
wait $cpid
early_crc=$?
wait $apid
show_files "$out.a$SID6" "$out.c$SID6"
# A REQ for SID4, listened on, whose primary path names a GID rxe1 does not have; its REJ
# comes back to rxe0's cepm (which counts it) over the wire.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID4 --cm-only --timeout-ms 30000 \
	>"$out.a$SID4" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.a$SID4"
rejs_before=$(rx REJ)
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --to-gid ::ffff:10.77.0.2 --service-id $SID4 \
	--remote-gid ::ffff:10.99.0.1 --local-comm-id 0x5eed0012
wait_until 10 counter_reaches rx REJ $((rejs_before + 1)) || ktap_print_msg "no REJ came back to $RXE_DEV"
kill $apid 2>/dev/null
wait $apid 2>/dev/null
# That REJ is the last CM message: once dumpcap has written every REJ that crossed veth0, the
# capture is whole.
rejs_crossed=$(($(rx REJ) + $(tx REJ) - rejs_before_capture))
wait_until 10 capture_has_mads "$out.pcap" 0012 "$rejs_crossed"
kill -INT $tpid
wait $tpid

# One line per CM frame: attribute ID, TID, REP TargetAckDelay (empty but in REPs).
tshark -r "$out.pcap" -Y infiniband.mad.attributeid -T fields -e infiniband.mad.attributeid \
	-e infiniband.mad.transactionid -e infiniband.cm.rep.tgtackdelay -e infiniband.cm.rej.reason \
	-e infiniband.cm.rej.rejinfolen -e infiniband.cm.rej.ari >"$out.frames" 2>"$out.tshark-err"
trc=$?
show_file '# frame: ' "$out.frames"
show_file '# tshark: ' "$out.tshark-err"
# tids ATTR: the TIDs of the frames with attribute ATTR, sorted.
tids() { awk -F'\t' -v a="$1" '$1 == a { print $2 }' "$out.frames" | sort -u; }
# replies_answer REQUEST REPLY...: every REPLY frame (at least one of each) has the TID of a
# REQUEST frame.
replies_answer() {
	local request=$1 reply
	shift
	for reply; do
		[ -n "$(tids "$reply")" ] || { echo "no frame with attribute $reply" >&2; return 1; }
		comm -23 <(tids "$reply") <(tids "$request") | sed "s/^/# $reply with a TID no $request has: /" |
			grep . && return 1
	done
	return 0
}
ktap_check "tshark dissected the capture" sh -c "test $trc = 0 && test -s '$out.frames'"
# One line per REQ: hop limit, local and remote port LIDs, SubnetLocal.
tshark -r "$out.pcap" -Y 'infiniband.mad.attributeid == 0x0010' -T fields \
	-e infiniband.cm.req.prim_hoplim -e infiniband.cm.req.prim_locallid \
	-e infiniband.cm.req.prim_remotelid -e infiniband.cm.req.prim_subnetlocal >"$out.reqs" 2>/dev/null
show_file '# REQ hop limit, LIDs, SubnetLocal: ' "$out.reqs"
# Every REQ, the client's and the forged ones alike, crosses more than one hop.
permissive_lids() {
	local hops local_lid remote_lid subnet_local n=0
	while IFS=$'\t' read -r hops local_lid remote_lid subnet_local; do
		[ $((hops)) -gt 1 ] || return 1
		[ "$((local_lid)) $((remote_lid)) $((subnet_local))" = "65535 65535 0" ] || return 1
		n=$((n + 1))
	done <"$out.reqs"
	[ $n -gt 0 ]
}
ktap_check "every REQ carries the permissive LID 0xFFFF as both port LIDs, and SubnetLocal 0" \
	permissive_lids
ktap_check "REP, RTU, MRA and REJ carry the TID of the REQ they answer" replies_answer 0x0010 0x0013 0x0014 0x0011 0x0012
ktap_check "the DREP carries the TID of the DREQ it answers" replies_answer 0x0015 0x0016
rtu_after_ignored_dreq() {
	[ $rtu_resent = 1 ] || { ktap_print_msg "no RTU answered the duplicate REP"; return 1; }
	[ $early_crc = 0 ] || { ktap_print_msg "the slow server's client failed ($early_crc)"; return 1; }
	! tids 0x0014 | grep -qi -e "${IGNORED_DREQ_TID: -8}\$" -e "${EARLY_DREQ_TID: -8}\$"
}
ktap_check "RTUs sent after DREQs the CEP ignored (wrong QPN; in REQ_SENT) carry the REQ's TID, not theirs" \
	rtu_after_ignored_dreq

ack_delay=$(ibv_devinfo -v -d "$SERVER_DEV" | awk '/local_ca_ack_delay:/ { print $2 }')
# tshark prints the field in hex (0x0f), ibv_devinfo in decimal: compare numbers.
rep_ack_delays=$(awk -F'\t' '$1 == "0x0013" { print $3 }' "$out.frames" | while read -r d; do echo $((d)); done |
	sort -u | tr '\n' ' ')
ktap_print_msg "$SERVER_DEV's local CA ACK delay: $ack_delay; TargetAckDelay in the REPs: $rep_ack_delays"
ktap_check "every REP's TargetAckDelay is the device's local CA ACK delay" \
	sh -c "test -n '$ack_delay' && test '$rep_ack_delays' = '$ack_delay '"

# The REJ 12's ARI: its length, then that many bytes of the field (tshark prints numbers in
# hex, and the whole 72-byte field, perhaps with colons).
gid0=$(tr -d ':\n' <"/sys/class/infiniband/$SERVER_DEV/ports/1/gids/0")
rej12=$(awk -F'\t' '$1 == "0x0012" { print $4, $5, $6 }' "$out.frames" | while read -r reason len ari; do
	[ -n "$reason" ] && [ $((reason)) = 12 ] || continue
	ari=${ari//:/}
	echo "$((len)) ${ari:0:$((2 * len))}"
done | sort -u)
ktap_print_msg "$SERVER_DEV's GID 0: $gid0; REJ 12 ARI length and bytes: $rej12"
ktap_check "a REQ for a GID the port lacks gets REJ 12 with the port's GID 0 as its 16-byte ARI" \
	test "$rej12" = "16 $gid0"
ktap_finished
