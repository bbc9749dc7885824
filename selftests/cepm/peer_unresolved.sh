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
ktap_set_plan 6

SID=0x0000000001064e90
SPOOFED=10.77.0.99
SPOOFED_GID=::ffff:$SPOOFED
DREQS=40
out=$CEPM_ROOT/out/peer_unresolved.$$
apid=
cleanup() {
	[ -z "$apid" ] || kill "$apid" 2>/dev/null
	wait 2>/dev/null
	if [ "$TOPOLOGY" = two-hosts ]; then
		"${PEER[@]}" ip addr del "$SPOOFED/24" dev veth1 2>/dev/null
		"${PEER[@]}" sysctl -qw net.ipv4.conf.veth1.arp_ignore=0 2>/dev/null
		ip neigh del "$SPOOFED" dev veth0 2>/dev/null
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
# The peer then answers no ARP for its own address either: that one's entries are fixed.
spoofable() {
	peer_neighbours_fixed &&
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
ktap_finished
