#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# When a REQ or a REP runs out of retries, cepm sends REJ 4 (Timeout) with its CA GUID in the
# ARI, so that the peer finds its side of the connection by (comm ID, CA GUID) and ends it at
# once (Linux's cm_rej_handler, through cm_acquire_rejected_id), instead of waiting out its
# own timers.  Loopback on rxe0:
#  1. a REQ to nobody: REQ_ERROR, then one REJ 4 on the wire;
#  2. a passive side whose RTUs are all dropped (debugfs fault injection) resends its REP until
#     its retries run out: its REJ 4 reaches the active side, which believed the connection
#     established, as REJ_RECEIVED (status 4). Both ends answer 250 ms late (the server its
#     REP, the client its RTU), as processes do on a loaded or KASAN guest: the client's REQ
#     and the server's REP must outlast that, so here its CM response timeout is 17 (0.54 s a
#     try, three tries) rather than case 1's 12 (17 ms, which a loaded guest missed).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

SID=0x0000000001064e77
out=$CEPM_ROOT/out/cep_timeout_rej.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; drop_rx 0 0; rm -f "$out".*' EXIT
timers=(--cm-only --max-cm-retries 2 --packet-life-time 8)
fast=("${timers[@]}" --cm-response-timeout 12)

# 1.
nowhere=("${NOWHERE[@]}")
rej0=$(tx REJ)
"$CEPMCTL" connect --service-id $SID "${fast[@]}" "${nowhere[@]}" --timeout-ms 20000 >"$out.req" 2>&1
rc=$?
show_files "$out.req"
ktap_check "an unanswered REQ ends in REQ_ERROR (ETIMEDOUT)" \
	sh -c "test $rc != 0 && grep -q 'got REQ_ERROR (status 110)' '$out.req'"
ktap_check "... and one REJ went out after it" wait_until 5 counter_is tx REJ $((rej0 + 1))

# 2.
drop_rx 0x14 100
slow=(--answer-delay-ms 250)
patient=("${timers[@]}" --cm-response-timeout 17)
"$CEPMCTL" accept --service-id $SID --cm-only "${slow[@]}" --timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.accept"
"$CEPMCTL" connect --service-id $SID "${patient[@]}" "${slow[@]}" --hold --timeout-ms 30000 >"$out.connect" 2>&1 &
cpid=$!
wait $apid
arc=$?
timeout_rej() { file_has 'event REJ_RECEIVED on CEP [0-9]* \(status 4\)' "$out.connect"; }
wait_until 10 timeout_rej
drop_rx 0 0
show_files "$out.accept" "$out.connect"
ktap_check "the passive side's REP ran out of retries (REP_ERROR, ETIMEDOUT)" \
	sh -c "test $arc != 0 && grep -q 'got REP_ERROR (status 110)' '$out.accept'"
ktap_check "the active side believed it established" grep -q 'RTU sent; CEP [0-9]* in ESTABLISHED' "$out.connect"
ktap_check "... and then got the passive side's REJ 4" timeout_rej
kill $cpid 2>/dev/null
wait
ktap_finished
