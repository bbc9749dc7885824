#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Connections that cannot complete: a REQ nobody answers runs out of retries (REQ_ERROR), and
# a process killed with SIGKILL mid-handshake leaves nothing behind (its REQ is cancelled and
# the peer gets a REJ).
#  loopback   the REQ goes to an address on the veth pair where no RDMA device listens;
#  two-hosts  it goes to a listening server in the other namespace, and netem drops every
#             packet on the way (100% loss on veth0).
# The SIGKILL case sends its REQ to the unlistened address in both topologies; a REQ left
# unclaimed when its listener closes goes to the server in both.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = loopback ] && ktap_set_plan 6 || ktap_set_plan 7

out=$CEPM_ROOT/out/cep_failures.$$
trap 'tc qdisc del dev veth0 root 2>/dev/null; topology_down; rm -f "$out".*' EXIT
nowhere=("${NOWHERE[@]}")

ktap_check "topology $TOPOLOGY is up" topology_up
SID=0x0000000001064e27
case $TOPOLOGY in
loopback) target=("${nowhere[@]}") ;;
two-hosts)
	"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --cm-only --timeout-ms 3000 >"$out.server" 2>&1 &
	spid=$!
	wait_until 10 file_has '^accept: listening' "$out.server"
	# CONNECT takes the next hop's MAC from the neighbour table, and netem would drop the
	# ARP exchange that finds it: the entries are fixed first.
	peer_neighbours_fixed
	modprobe sch_netem
	tc qdisc add dev veth0 root netem loss 100%
	target=("${TO_SERVER[@]}")
	;;
esac
# 3 sends (1 + 2 retries) of 2 x 1 ms (PLT 8) + 16.8 ms (exponent 12) each: about 60 ms,
# far below connect's own 20 s wait, which would fail differently ("no event").
"$CEPMCTL" connect --service-id $SID --cm-only "${target[@]}" \
	--max-cm-retries 2 --cm-response-timeout 12 --packet-life-time 8 --timeout-ms 20000 >"$out.timeout" 2>&1
rc=$?
show_files "$out.timeout"
ktap_check "an unanswered REQ ends in REQ_ERROR (ETIMEDOUT)" \
	sh -c "test $rc != 0 && grep -q 'got REQ_ERROR (status 110)' '$out.timeout'"
if [ "$TOPOLOGY" = two-hosts ]; then
	tc -s qdisc show dev veth0 | sed 's/^/# veth0: /'
	ktap_check "... netem really dropped what went to the server" \
		sh -c "tc -s qdisc show dev veth0 | grep -q 'dropped [1-9]'"
	tc qdisc del dev veth0 root
	wait $spid
	show_files "$out.server"
fi
ktap_check "no CEP is left after the timeout" wait_until 10 ceps_are 0

# A REQ left unclaimed on a listener that then closes: the close rejects it (REJ 28).
"${SERVER[@]}" "$CEPMCTL" serve --service-id 0x0000000001064e29 --leave-unclaimed --timeout-ms 20000 >"$out.unclaimed-s" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.unclaimed-s"
"$CEPMCTL" connect --service-id 0x0000000001064e29 --cm-only "${TO_SERVER[@]}" >"$out.unclaimed" 2>&1
rc=$?
wait $spid
show_files "$out.unclaimed-s" "$out.unclaimed"
ktap_check "a REQ left unclaimed when its listener closes is rejected (REJ 28)" \
	sh -c "test $rc != 0 && grep -q 'got REJ_RECEIVED (status 28)' '$out.unclaimed'"

# Long retries this time; SIGKILL while the REQ is outstanding.
rej0=$(tx REJ)
"$CEPMCTL" connect --service-id 0x0000000001064e28 --cm-only "${nowhere[@]}" --timeout-ms 60000 >"$out.kill" 2>&1 &
pid=$!
req_sent() { file_has '^connect: REQ sent' "$out.kill"; }
wait_until 10 req_sent
kill -9 $pid
wait $pid 2>/dev/null
ktap_check "SIGKILL mid-handshake: the CEP is gone" wait_until 10 ceps_are 0
ktap_check "... and its destroy sent a REJ (Timeout) to the peer" wait_until 10 counter_is tx REJ $((rej0 + 1))
ktap_finished
