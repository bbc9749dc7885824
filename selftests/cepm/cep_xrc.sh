#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# XRC connections, CM side only (rxe has no XRC QPs, so no data moves), as Linux's cm.c makes
# them:
#  - an XRC REQ is offered to the listener like any other, not rejected with reason 9; the
#    CEP it spawns is an XRC target (cm_req_get_qp_type);
#  - the initiator's REQ is TransportServiceType 3 with ExtendedTransportType 1, and carries no
#    responder resources, retry counts or SRQ bit (cm_format_req);
#  - the target's REP names its QP in LocalEECN, with LocalQPN 0, the SRQ bit set, and no
#    initiator depth or end-to-end flow control (cm_format_rep); the initiator takes that
#    EECN as the QPN it connects to (cm_rep_handler), then sends its RTU;
#  - the QP attribute masks per role (cm_init_qp_rtr_attr, cm_init_qp_rts_attr): the
#    initiator's RTR has no responder resources or RNR timer, the target's RTS no retry
#    counts or initiator depth.
# The target (cepmctl accept --xrc) runs on rxe1 in the peer namespace, the initiator (connect
# --xrc) on rxe0; a REQ is also forged on rxe0 (send-mad --transport xrc --to-gid) for a
# listener on rxe1.  tshark dissects what crossed veth0.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology (a capture on veth0)"; exit "$KSFT_SKIP"; }
ktap_set_plan 7

SID1=0x0000000001064e91 SID2=0x0000000001064e92
INI_QPN=0x00a1c1 TGT_QPN=0x00a1c2
# IB_QP_* masks (include/rdma/ib_verbs.h): INIT is STATE | ACCESS_FLAGS | PKEY_INDEX | PORT for
# both; RTR is STATE | AV | PATH_MTU | RQ_PSN | DEST_QPN, the target's with MIN_RNR_TIMER |
# MAX_DEST_RD_ATOMIC; RTS is STATE | SQ_PSN | TIMEOUT, the initiator's with RETRY_CNT |
# RNR_RETRY | MAX_QP_RD_ATOMIC.
INI_MASKS="INIT 0x39, RTR 0x101181, RTS 0x12e01"
TGT_MASKS="INIT 0x39, RTR 0x129181, RTS 0x10201"
out=$CEPM_ROOT/out/cep_xrc.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up

dumpcap -i veth0 -f "udp port 4791" -w "$out.pcap" >"$out.dumpcap" 2>&1 &
tpid=$!
wait_until 30 file_has "Capturing on" "$out.dumpcap"

# A forged XRC REQ for a listener on rxe1: offered to it (its accept claims it), not REJ 9.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID1 --cm-only --timeout-ms 10000 \
	>"$out.forged" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.forged"
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --to-gid ::ffff:10.77.0.2 --service-id $SID1 --transport xrc \
	--local-comm-id 0x5eed0091 --qpn 0x00f091
wait_until 10 file_has '^accept: REQ claimed' "$out.forged"
kill $apid 2>/dev/null
wait $apid 2>/dev/null
show_files "$out.forged"
ktap_check "a forged XRC REQ is offered to the listener as an XRC REQ, not rejected with reason 9" \
	file_has '^accept: REQ claimed .*transport XRC' "$out.forged"

# A CM-only XRC connection and its disconnect.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID2 --cm-only --xrc --qpn $TGT_QPN \
	--timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.accept"
"$CEPMCTL" connect --service-id $SID2 --cm-only --xrc --qpn $INI_QPN --timeout-ms 30000 "${TO_SERVER[@]}" \
	>"$out.connect" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.accept" "$out.connect"
ktap_check "connect --xrc and accept --xrc make a CM-only XRC connection (exits $crc, $arc)" \
	test "$crc$arc" = 00
# cepmctl prints QPNs without leading zeros.
ktap_check "the initiator connects to the QPN the target's REP named (its LocalEECN)" \
	file_has "^connect: QP $(printf %#x $INI_QPN) in RTS, connected to QP $(printf %#x $TGT_QPN) " "$out.connect"
ktap_check "QP attribute masks of an XRC initiator ($INI_MASKS) and target ($TGT_MASKS)" \
	sh -c "grep -q '^connect: QP attribute masks: $INI_MASKS\$' '$out.connect' &&
		grep -q '^accept: QP attribute masks: $TGT_MASKS\$' '$out.accept'"

# The connection's DREP is its last CM message: once dumpcap has it, the capture is whole.
wait_until 10 capture_has_mads "$out.pcap" 0016 1
kill -INT $tpid
wait $tpid

# REQ: service ID, TransportServiceType, ExtendedTransportType, LocalQPN, ResponderResources,
# RetryCount, RNRRetryCount, SRQ.
tshark -r "$out.pcap" -Y 'infiniband.mad.attributeid == 0x0010' -T fields -e infiniband.cm.req.serviceid \
	-e infiniband.cm.req.transpsvctype -e infiniband.cm.req.ext_transport -e infiniband.cm.req.localqpn \
	-e infiniband.cm.req.responderres -e infiniband.cm.req.retrcount -e infiniband.cm.req.rnrretrcount \
	-e infiniband.cm.req.srq >"$out.reqs" 2>"$out.tshark-err"
# REP: LocalQPN, LocalEECN, SRQ, InitiatorDepth, End-to-End Flow Control.
tshark -r "$out.pcap" -Y 'infiniband.mad.attributeid == 0x0013' -T fields -e infiniband.cm.rep.localqpn \
	-e infiniband.cm.rep.localeecn -e infiniband.cm.rep.srq -e infiniband.cm.rep.initdepth \
	-e infiniband.cm.rep.e2eflowctrl >"$out.reps" 2>>"$out.tshark-err"
show_file '# REQ: ' "$out.reqs"
show_file '# REP: ' "$out.reps"
show_file '# tshark: ' "$out.tshark-err"
# tshark prints numbers in hex or decimal depending on the field: compare them as numbers.
numbers() { local v; for v; do printf '%d ' "$v"; done; }
ini_req() {
	local sid tst ext rest
	while IFS=$'\t' read -r sid tst ext rest; do
		[ "$((sid))" = "$((SID2))" ] || continue
		# shellcheck disable=SC2086 # the fields, one word each
		[ "$(numbers "$tst" "$ext" $rest)" = "3 1 $((INI_QPN)) 0 0 0 0 " ] && return 0
	done <"$out.reqs"
	return 1
}
ktap_check "the initiator's REQ: transport 3, extended 1, its QPN, no responder resources, retries or SRQ" ini_req
tgt_reps() {
	local n=0 line
	while IFS=$'\t' read -r -a line; do
		[ "$(numbers "${line[0]}" "${line[2]}" "${line[3]}" "${line[4]}")" = "0 1 0 0 " ] || return 1
		[ $((line[1])) != 0 ] || return 1
		[ $((line[1])) = $((TGT_QPN)) ] && n=$((n + 1))
	done <"$out.reps"
	[ $n -ge 1 ]
}
ktap_check "every target's REP: LocalQPN 0, its QPN in LocalEECN, SRQ 1, no initiator depth or flow control" \
	tgt_reps
ktap_finished
