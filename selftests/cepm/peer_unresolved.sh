#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A peer that sends from an address no one answers ARP for must not hold anyone else's MADs
# back.  On RoCE an answer's next-hop MAC comes from the neighbour table; resolving an unknown
# one waits up to a second (rdma_addr_find_l2_eth_by_grh), and cepm answers from inside the MAD
# layer's receive handler, which every MAD of the port goes through.  The peer (rxe1, in its
# namespace) owns 10.77.0.99 but answers no ARP request (arp_ignore=8); it sends DREQs for no
# connection from there, each of which would get a stateless DREP, and then connects to a
# listener of this host.  Two hosts only: on loopback every address is this host's own.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 8

SID=0x0000000001064e90
SPOOFED=10.77.0.99
SPOOFED_GID=::ffff:$SPOOFED
DREQS=40
# For the full neighbour table: 16 more of the peer's addresses, 10.77.0.100 to .115.
MANY=$(seq 100 115)
GC=/proc/sys/net/ipv4/neigh/default
gc_saved=
out=$CEPM_ROOT/out/peer_unresolved.$$
apid=
cleanup() {
	local i
	[ -z "$apid" ] || kill "$apid" 2>/dev/null
	wait 2>/dev/null
	if [ "$TOPOLOGY" = two-hosts ]; then
		for i in $MANY; do
			echo "addr del 10.77.0.$i/24 dev veth1"
		done | "${PEER[@]}" ip -force -batch - 2>/dev/null
		"${PEER[@]}" ip addr del "$SPOOFED/24" dev veth1 2>/dev/null
		"${PEER[@]}" sysctl -qw net.ipv4.conf.veth1.arp_ignore=0 2>/dev/null
		for i in 99 $MANY; do ip neigh del "10.77.0.$i" dev veth0 2>/dev/null; done
	fi
	# Thresholds 3, 2, 1 back in the order that keeps 1 <= 2 <= 3 at each step.
	if [ -n "$gc_saved" ]; then
		set -- $gc_saved
		echo "$3" >$GC/gc_thresh3
		echo "$2" >$GC/gc_thresh2
		echo "$1" >$GC/gc_thresh1
	fi
	topology_down
	rm -f "$out".*
}
trap cleanup EXIT

[ "$TOPOLOGY" = two-hosts ] || ktap_exit_fail_msg "two-hosts only (run it as peer_unresolved.sh@two-hosts)"
ktap_check "topology $TOPOLOGY is up" topology_up

# rxe1's GID table lists its netdev's addresses: the spoofed one, as an IPv4-mapped GID.
spoofed_gid_listed() {
	"${PEER[@]}" sh -c 'cat /sys/class/infiniband/rxe1/ports/1/gids/*' 2>/dev/null |
		grep -q ':ffff:0a4d:0063$'
}
spoofable() {
	"${PEER[@]}" sysctl -qw net.ipv4.conf.veth1.arp_ignore=8 &&
		"${PEER[@]}" ip addr add "$SPOOFED/24" dev veth1 &&
		wait_until 10 spoofed_gid_listed
}
ktap_check "rxe1 has a GID for $SPOOFED, whose ARP requests no one answers" spoofable

listening() { file_has '^accept: listening' "$out.accept"; }
"$CEPMCTL" accept --device "$RXE_DEV" --service-id $SID --cm-only --count 1 --timeout-ms 120000 \
	>"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening

drep0=$(tx DREP)
ktap_check "the peer sends $DREQS DREQs for no connection from $SPOOFED_GID" \
	"${PEER[@]}" "$CEPMCTL" send-mad rxe1 1 DREQ --valid --from-gid "$SPOOFED_GID" \
	--to-gid ::ffff:10.77.0.1 --count $DREQS
# Right behind them, one from the peer's own address.  Were the port's MADs held back a second
# for each of those, ARP waiting, its DREP would come after $DREQS seconds.
"${PEER[@]}" "$CEPMCTL" send-mad rxe1 1 DREQ --valid --to-gid ::ffff:10.77.0.1 --local-comm-id 0x5eed
ktap_check "a DREQ for no connection from the peer's own address, sent right after, gets its DREP within 10 s" \
	wait_until 10 counter_is tx DREP $((drep0 + 1))
ktap_check "none went to $SPOOFED, whose MAC this host cannot learn" \
	counter_is tx DREP $((drep0 + 1))
# A connection takes a second or two here, KASAN's included.
connects_meanwhile() {
	local start=$SECONDS rc
	"${PEER[@]}" "$CEPMCTL" connect --device rxe1 --service-id $SID --cm-only \
		--peer-ip 10.77.0.1 --peer-mac "$(cat /sys/class/net/veth0/address)" \
		--timeout-ms 20000 >"$out.connect" 2>&1
	rc=$?
	ktap_print_msg "the peer's connection: exit $rc after $((SECONDS - start)) s"
	sed 's/^/# /' "$out.connect" | tail -3
	return $rc
}
ktap_check "the peer's connection to a listener of this host is made within 20 s" \
	connects_meanwhile

# A full neighbour table: no entry can be made for a new address, and the RDMA core's
# resolution then waits its second as for an address no one answers.  This host's ARP table
# may hold 8 entries (permanent ones aside); the peer sends from 16 more addresses.
many_gids_listed() {
	[ "$("${PEER[@]}" sh -c 'cat /sys/class/infiniband/rxe1/ports/1/gids/*' 2>/dev/null |
		grep -c ':ffff:0a4d:00\(6[4-9a-f]\|7[0-3]\)$')" = 16 ]
}
table_full() {
	local i
	gc_saved="$(cat $GC/gc_thresh1) $(cat $GC/gc_thresh2) $(cat $GC/gc_thresh3)"
	echo 4 >$GC/gc_thresh1 && echo 6 >$GC/gc_thresh2 && echo 8 >$GC/gc_thresh3 || return 1
	for i in $MANY; do
		echo "addr add 10.77.0.$i/24 dev veth1"
	done | "${PEER[@]}" ip -batch - && wait_until 20 many_gids_listed
}
ktap_check "rxe1 has GIDs for 16 more such addresses, and this host's ARP table room for 8" \
	table_full
drep0=$(tx DREP)
for i in $MANY; do
	"${PEER[@]}" "$CEPMCTL" send-mad rxe1 1 DREQ --valid --from-gid "::ffff:10.77.0.$i" \
		--to-gid ::ffff:10.77.0.1 --count 3 --local-comm-id $((0x7000 + i * 16))
done
"${PEER[@]}" "$CEPMCTL" send-mad rxe1 1 DREQ --valid --to-gid ::ffff:10.77.0.1 --local-comm-id 0x5eee
ktap_check "a DREQ from the peer's own address right after 48 from them gets its DREP within 10 s" \
	wait_until 10 counter_is tx DREP $((drep0 + 1))
ktap_finished
