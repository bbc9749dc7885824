#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A REJ is taken only by the CEP it is for (proto/src/rej_match.rs, as Linux's
# cm_acquire_rejected_id matches it).  A hostile peer on the fabric (cepmctl send-mad, through
# ib_umad) sends REJs at a live connection:
#  1. spoofs that name one end's comm ID but not its peer's: LocalCommID 0 with MessageRejected
#     REQ, REP or OTHER, and a wrong LocalCommID.  None may touch the connection;
#  2. then a REJ with the right IDs, which must: it also shows that the spoofs before it (sent
#     earlier on the same port, handled in order) reached cepm and were refused;
#  3. a timeout REJ (reason 4) from a client that gave up in REQ_SENT, matched by the CA GUID in
#     its ARI and its LocalCommID (its RemoteCommID is 0): the passive CEP, resending its REP,
#     stops at once with REJ_RECEIVED instead of retrying for a minute;
#  4. the same REJ for a REQ that mad_fuzz.sh's sink (cepmctl serve) has claimed but not yet
#     rejected: its REJECT is then EINVAL (the CEP is no longer in REQ_RCVD), and the sink must
#     carry on.  mad_fuzz.sh's fuzzed REJs do this to the sink too (seed 1 under KASAN);
#  5. the same REJ before the sink has even claimed the REQ: it then claims a CEP already in
#     IDLE, and its REJECT is EINVAL too (seed 1 under KASAN, after about 59,000 MADs).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 9

SID=0x0000000001064e72
SID_T=0x0000000001064e73
out=$CEPM_ROOT/out/cep_rej_match.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$out.accept"; }
spoof() { "$CEPMCTL" send-mad "$RXE_DEV" 1 REJ "$@"; }
# The established CEP with local comm ID $1: its peer's comm ID.
peer_of() { "$CEPMCTL" list | awk -v id="$1" '$1 == id && $2 == "ESTABLISHED" { print $4 }'; }
anyone_saw() { grep -qh "$1" "$out.accept" "$out.connect"; }

# 1 and 2: a CM-only connection on rxe0, both ends holding it until their next event.
hold_pair $SID "$out"
victim=$("$CEPMCTL" list | awk '$2 == "ESTABLISHED" { print $1; exit }')
peer=$(peer_of "$victim")
ktap_print_msg "victim CEP $victim, its peer $peer"
ktap_check "a connection is established (victim $victim, peer $peer)" \
	sh -c "test -n '$victim' && test -n '$peer' && test $(established_ceps) = 2"

rx0=$(rx REJ)
spoof --local-comm-id 0 --remote-comm-id "$victim" --msg-rejected REQ --reason 1
spoof --local-comm-id 0 --remote-comm-id "$victim" --msg-rejected REP --reason 2
spoof --local-comm-id 0 --remote-comm-id "$victim" --msg-rejected OTHER --reason 3
spoof --local-comm-id $((peer ^ 1)) --remote-comm-id "$victim" --msg-rejected OTHER --reason 5
wait_until 10 counter_reaches rx REJ $((rx0 + 4))
ktap_check "cepm received the four spoofed REJs" test "$(rx REJ)" = $((rx0 + 4))
ktap_check "... and both ends are still ESTABLISHED" test "$(established_ceps)" = 2

spoof --local-comm-id "$peer" --remote-comm-id "$victim" --msg-rejected OTHER --reason 28
wait_until 10 anyone_saw 'event REJ_RECEIVED'
show_files "$out.accept" "$out.connect"
ktap_check "the genuine REJ (reason 28) reached the victim's owner" anyone_saw 'event REJ_RECEIVED on CEP [0-9]* (status 28)'
ktap_check "... and no spoofed one did (reasons 1, 2, 3, 5)" \
	sh -c "! grep -hq 'event REJ_RECEIVED on CEP [0-9]* (status [1235])' '$out.accept' '$out.connect'"
kill $(jobs -p) 2>/dev/null
wait

# 3: a REQ from a "client" that then gives up and sends REJ 4 with its CA GUID.
guid=0x0002c90300aabbcc
client_id=0xabc10001
"$CEPMCTL" accept --service-id $SID_T --cm-only --timeout-ms 60000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
send_req_counted --valid --service-id $SID_T --comm-id $client_id --ca-guid $guid
wait_until 20 list_has_state REP_SENT
ktap_check "the passive CEP answered the REQ and resends its REP" list_has_state REP_SENT
spoof --local-comm-id $client_id --remote-comm-id 0 --msg-rejected OTHER --reason 4 --ari "${guid#0x}"
timeout_rej_seen() { file_has 'event REJ_RECEIVED on CEP [0-9]* \(status 4\)' "$out.accept"; }
wait_until 10 timeout_rej_seen
show_files "$out.accept"
ktap_check "the timeout REJ, matched by CA GUID and comm ID, ended the passive side at once" timeout_rej_seen
kill $apid 2>/dev/null
wait

# sink_case FILE SID COMM_ID OPTION READY PAST: a sink (serve --count 2 OPTION) on SID, its output
# in FILE; a REQ from COMM_ID; once FILE matches READY, the client's timeout REJ for it; once
# FILE matches PAST and says the peer ended the request (or the sink has exited), a second REQ
# from COMM_ID + 1. READY and PAST are extended regular expressions (file_has). The sink's exit
# status in $src.
sink_case() {
	local file=$1 sid=$2 comm=$3 option=$4 ready=$5 past=$6 spid
	"$CEPMCTL" serve --service-id "$sid" --count 2 "$option" --timeout-ms 60000 >"$file" 2>&1 &
	spid=$!
	wait_until 10 file_has '^serve: listening' "$file"
	send_req_counted --valid --service-id "$sid" --comm-id "$comm" --ca-guid $guid
	wait_until 20 file_has "$ready" "$file"
	spoof --local-comm-id "$comm" --remote-comm-id 0 --msg-rejected OTHER --reason 4 --ari "${guid#0x}"
	# Past the first request: the sink either carried on or gave up.
	past_first() { { file_has "$past" "$file" && file_has 'peer ended' "$file"; } || exited $spid; }
	wait_until 20 past_first
	send_req_counted --valid --service-id "$sid" --comm-id $((comm + 1)) --ca-guid $guid
	wait $spid
	src=$?
	show_files "$file"
}

# 4: the sink claims a REQ; the client gives up (REJ 4) before the sink's REJ; a second REQ.
sink_case "$out.serve" 0x0000000001064e74 $((client_id + 1)) --first-awaits-peer-event \
	"^serve: REQ from comm ID $(printf '%#x' $((client_id + 1)))" 'REJ_RECEIVED on CEP [0-9]* \(status 4\) before the REJ'
ktap_check "the sink carries on past a request the client ended before the sink's REJ (exit $src)" \
	sh -c "test $src = 0 && grep -q 'rejected with reason 28' '$out.serve'"

# 5: the client gives up (REJ 4) before the sink claims its REQ; a second REQ.
sink_case "$out.serve2" 0x0000000001064e75 $((client_id + 3)) --first-claims-after-peer-ends \
	'^serve: event REQ_RECEIVED' '^serve: the peer has ended the first request'
ktap_check "the sink carries on past a request the client ended before the sink claimed it (exit $src)" \
	sh -c "test $src = 0 && grep -q '^serve: the peer has ended the first request' '$out.serve2' && grep -q 'peer ended the request first' '$out.serve2' && grep -q 'rejected with reason 28' '$out.serve2'"
ktap_finished
