#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The passive side of a connection as far as cepm takes it: a listener gets a REQ event,
# claims the new CEP (REQ details intact), rejects it with private data; a REQ left unclaimed
# is rejected when its listener goes away, and so is one that a GET_REQUEST could not take
# (debugfs fail_handle_count: the file's handle numbers ran out), which stays in the backlog;
# a SIDR_REQ beyond a full backlog is dropped, as a REQ is, not rejected; so is a REQ the
# backlog had no room for (debugfs fail_backlog_push_count: an atomic allocation failed).
# Listens scoped by an address take the REQs whose cma_hdr names it. Listens whose service
# IDs a user picked to share one shard of the listener table under an unkeyed hash of the ID
# spread over the shards (debugfs listen_shards counts the service IDs in each).
# REQs come from ib_umad loopback (cepmctl send-mad).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 24

SID=0x0000000001064e21    # RDMA CM TCP port space, port 20001
out=$CEPM_ROOT/out/cep_listen.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; echo 0 >$CEPM_DEBUGFS/fail_handle_count; echo 0 >$CEPM_DEBUGFS/fail_backlog_push_count; [ "$(cat /sys/module/cepm/parameters/listen_backlog 2>/dev/null)" = 1024 ] || { rmmod cepm; insmod "$CEPM_KO"; }' EXIT
listening() { file_has '^serve: listening' "$1"; }
# serve_bg OUT ARGS...: `cepmctl serve ARGS` in the background, its output in OUT and its PID
# in $pid, once it listens.
serve_bg() {
	local out=$1
	shift
	"$CEPMCTL" serve "$@" >"$out" 2>&1 &
	pid=$!
	wait_until 10 listening "$out"
}
# lib.sh's probe for a tool's listener, which the rdmacm tests wait on: this one, and no other.
listens_on_20001_only() { cepm_listens 20001 && ! cepm_listens 20002 && ! cepm_listens 20001 $UDP; }

rej0=$(tx REJ)
serve_bg "$out.1" --service-id $SID --reason 28 --reject-data "no thanks" --timeout-ms 20000
ktap_check "cepm_listens sees the listener on TCP port 20001, and none on port 20002 or UDP 20001" \
	listens_on_20001_only
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID --comm-id 0xabc00001
wait $pid
rc=$?
show_files "$out.1"
ktap_check "serve saw the REQ, claimed and rejected it" test $rc = 0
ktap_check "the claimed CEP carries the REQ's fields, in REQ_RCVD" \
	grep -q "REQ from comm ID 0xabc00001 QPN 0x1234 PSN 0x5678 for $SID on $RXE_DEV port 1, CEP [0-9]* in REQ_RCVD" "$out.1"
ktap_check "the REJ went out" wait_until 10 counter_is tx REJ $((rej0 + 1))

serve_bg "$out.2" --service-id $SID --leave-unclaimed --timeout-ms 20000
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID --comm-id 0xabc00002
wait $pid
rc=$?
show_files "$out.2"
ktap_check "a second listener on the same service ID is possible once the first is gone" test $rc = 0
ktap_check "closing a listener rejects the REQ it left unclaimed" wait_until 10 counter_is tx REJ $((rej0 + 2))

# With no listener left, the service ID is unknown again: REJ 8, stateless.
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID --comm-id 0xabc00003
ktap_check "after the listener is gone, a REQ gets the stateless REJ" wait_until 10 counter_is tx REJ $((rej0 + 3))

# A GET_REQUEST that cannot reserve a handle fails, and leaves the REQ where it was.  The
# fault is armed once serve listens, so that it hits the GET_REQUEST and not serve's CREATE.
serve_bg "$out.3" --service-id $SID --timeout-ms 20000
echo 1 >$CEPM_DEBUGFS/fail_handle_count
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID --comm-id 0xabc00004
wait $pid
rc=$?
show_files "$out.3"
ktap_check "a GET_REQUEST without a handle to give fails with EMFILE" \
	sh -c "test $rc != 0 && grep -q 'event REQ_RECEIVED' '$out.3' && grep -q 'os error 24' '$out.3'"
ktap_check "... and the REQ stayed in the backlog: closing the listener rejects it" \
	wait_until 10 counter_is tx REJ $((rej0 + 4))

# A REQ for which the backlog has no room (the atomic allocation that makes it failed) is
# dropped, as one beyond a full backlog, not rejected: the requester retries it, and Linux
# drops a REQ it cannot allocate for (`cm_req_handler`). Its retry is then claimed as new.
fault_used() { local v; read -r v <$CEPM_DEBUGFS/fail_backlog_push_count && [ "$v" = 0 ]; }
# send_failing_push ATTR SEND_MAD_ARGS...: the next push onto a backlog fails; one ATTR is
# sent, and handled by the time this returns.
send_failing_push() {
	local attr=$1 received
	shift
	received=$(rx "$attr")
	echo 1 >$CEPM_DEBUGFS/fail_backlog_push_count
	"$CEPMCTL" send-mad "$RXE_DEV" 1 "$attr" "$@" &&
		wait_until 10 counter_is rx "$attr" $((received + 1)) && mad_barrier
}
serve_bg "$out.5" --service-id $SID --reason 28 --timeout-ms 20000
rej1=$(tx REJ)
send_failing_push REQ --valid --service-id $SID --comm-id 0xabc00005
dropped_not_rejected() { fault_used && [ "$(tx REJ)" = "$rej1" ]; }
ktap_check "a REQ the backlog had no room for is dropped, not rejected ($(($(tx REJ) - rej1)) REJ sent)" \
	dropped_not_rejected
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID --comm-id 0xabc00005
wait $pid
rc=$?
show_files "$out.5"
ktap_check "... and its retry is claimed by the listener, which rejects it" \
	sh -c "test $rc = 0 && grep -q 'REQ from comm ID 0xabc00005' '$out.5'"
# The same for a SIDR_REQ: dropped, no SIDR_REP (its status REJECT would be final).
serve_bg "$out.6" --service-id 0x0000000001114e22 --timeout-ms 20000
sidr_rep1=$(tx SIDR_REP)
send_failing_push SIDR_REQ --service-id 0x0000000001114e22 --local-comm-id 0x5005
sidr_dropped() { fault_used && [ "$(tx SIDR_REP)" = "$sidr_rep1" ]; }
ktap_check "a SIDR_REQ the backlog had no room for is dropped too ($(($(tx SIDR_REP) - sidr_rep1)) SIDR_REP sent)" \
	sidr_dropped
kill $pid
wait $pid 2>/dev/null

# Listens scoped by address (docs/abi.md, CEPM_IOC_LISTEN): on one service ID, a REQ whose
# cma_hdr names 10.77.0.1 goes to the listener on that address, any other IPv4 one to the
# wildcard beside it. A wildcard with AFONLY takes no IPv6 REQ, which gets REJ 28 as rdma_cm
# gives when no listener of a port matches (cma_ib_req_handler failing); a service ID nobody
# listens on still gets REJ 8, and a listener without an address still takes every REQ.
SID_S=0x0000000001064e23 SID_U=0x0000000001064e24
serve_bg "$out.spec" --service-id $SID_S --addr 10.77.0.1 --timeout-ms 20000
spec=$pid
serve_bg "$out.wild" --service-id $SID_S --addr 0.0.0.0 --timeout-ms 20000
wild=$pid
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID_S --comm-id 0xabc00021 --cma-dst 10.77.0.9
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID_S --comm-id 0xabc00022 --cma-dst 10.77.0.1
wait $spec
wait $wild
show_files "$out.spec" "$out.wild"
ktap_check "a REQ to 10.77.0.1 reaches the listener on 10.77.0.1, not the wildcard beside it" \
	sh -c "grep -q 'REQ from comm ID 0xabc00022' '$out.spec' && ! grep -q 'REQ from comm ID 0xabc00021' '$out.spec'"
ktap_check "... and a REQ to 10.77.0.9 reaches the wildcard" \
	sh -c "grep -q 'REQ from comm ID 0xabc00021' '$out.wild' && ! grep -q 'REQ from comm ID 0xabc00022' '$out.wild'"
serve_bg "$out.afonly" --service-id $SID_S --addr 0.0.0.0 --afonly --timeout-ms 20000
afonly=$pid
ktap_check "an IPv6 REQ where only an IPv4 wildcard with AFONLY listens gets REJ 28" \
	test "$(forged_rej v6 --service-id $SID_S --cma-dst fd77::9)" = 28
ktap_check "a REQ for a service ID nobody listens on still gets REJ 8" \
	test "$(forged_rej unknown --service-id 0x0000000001064e25 --cma-dst 10.77.0.1)" = 8
kill $afonly
wait $afonly 2>/dev/null
serve_bg "$out.unscoped" --service-id $SID_U --timeout-ms 20000
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id $SID_U --comm-id 0xabc00023 --cma-dst fd77::9
wait $pid
show_files "$out.unscoped"
ktap_check "a listener without an address takes an IPv6 REQ" \
	grep -q 'REQ from comm ID 0xabc00023' "$out.unscoped"
# A SIDR_REQ the same way: to 10.77.0.1, where only a listener for 10.77.0.5 listens, it gets
# SIDR_REP status 2 (REJECT), as rdma_cm's cm_destroy_id answers one in SIDR_REQ_RCVD, and the
# listener sees none.
SID_UDS=0x0000000001114e26
serve_bg "$out.ud" --service-id $SID_UDS --addr 10.77.0.5 --timeout-ms 20000
"$CEPMCTL" resolve --service-id $SID_UDS --rdma-cm --peer-ip 10.77.0.1 \
	--peer-mac "$(cat /sys/class/net/veth0/address)" >"$out.resolve" 2>&1
kill $pid
wait $pid 2>/dev/null
show_files "$out.resolve" "$out.ud"
ktap_check "a SIDR_REQ to 10.77.0.1 where only 10.77.0.5 listens: status 2, and the listener sees none" \
	sh -c "grep -q 'status 2,' '$out.resolve' && ! grep -q 'REQ from' '$out.ud'"

# A full backlog drops what comes next, so that the requester retries, as it drops a REQ: a
# REJECT would be final, and kept for the request's retries.  cepm reloaded with a backlog of
# 4 (module parameter listen_backlog, 1024 by default), then five SIDR_REQs from request IDs of
# their own, to a listener whose owner is stopped: four fill the backlog.
reload() { rmmod cepm && insmod "$CEPM_KO" "$@" && wait_until 20 port_listed "$RXE_DEV" 1; }
ktap_check "cepm reloaded with listen_backlog=4" reload listen_backlog=4
SID_UD=0x0000000001114e21
serve_bg "$out.4" --service-id $SID_UD --timeout-ms 60000
kill -STOP $pid
sidr_rep0=$(tx SIDR_REP) sidr_req0=$(rx SIDR_REQ)
"$CEPMCTL" send-mad "$RXE_DEV" 1 SIDR_REQ --service-id $SID_UD --local-comm-id 0x5000 --count 5
wait_until 20 counter_reaches rx SIDR_REQ $((sidr_req0 + 5))
pending=$(backlog_of $SID_UD)
mad_barrier
ktap_check "5 SIDR_REQs to a listener with a backlog of 4 whose owner is stopped: $pending wait in it, $(($(tx SIDR_REP) - sidr_rep0)) SIDR_REP(s) sent" \
	sh -c "test '$pending' = 4 && test $(tx SIDR_REP) = $sidr_rep0"
kill -KILL $pid
wait $pid 2>/dev/null
ktap_check "closing the listener answers the 4 it left with REJECT" \
	wait_until 30 counter_is tx SIDR_REP $((sidr_rep0 + 4))
ktap_check "cepm reloaded with its default backlog" reload

# Under a hash that folds an ID's bits (for an ID below 0x10000, ID ^ ID >> 8, modulo 16),
# each of these 256 is in shard 0: their bits 0 to 3 equal their bits 8 to 11.
ids=
for a in {0..15}; do for b in {0..15}; do ids+=$(printf '0x%x,' $((0x1000 | a << 8 | b << 4 | a))); done; done
"$CEPMCTL" hold-listens --service-ids "${ids%,}" --hold-ms 60000 >"$out.hold" 2>&1 &
pid=$!
wait_until 30 file_has '^holding 256 listens' "$out.hold"
shards=$(tr '\n' ' ' <$CEPM_DEBUGFS/listen_shards)
ktap_print_msg "service IDs per listener shard: $shards"
fullest() { printf '%s\n' $shards | sort -n | tail -n 1; }
ktap_check "256 listens picked to collide under an unkeyed hash: at most 64 in one shard" \
	test "$(fullest)" -le 64
kill $pid
wait $pid 2>/dev/null
no_ceps() { test "$(live_ceps)" = 0; }
ktap_check "no CEP is left in the module" wait_until 20 no_ceps
rm -f "$out".*
ktap_finished
