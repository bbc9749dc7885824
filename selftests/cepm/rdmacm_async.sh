#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_resolve_addr over cepm's librdmacm returns at once and completes by event, as
# librdmacm's does over the kernel's rdma_cm (rdmacm_stock.sh runs the same program on the
# stock stack, as the oracle): rdma_async_resolve resolves 1000 IDs toward the peer (10.77.0.2)
# from one thread and collects their ADDR_RESOLVED; toward 10.77.0.99, on the link but answered
# by no one, the call returns before its ADDR_ERROR exists; toward 198.51.100.1 (an
# "unreachable" route) the call fails itself; a synchronous ID waits. rdma_user_events checks
# RDMACM_1.4's asynchronous calls: rdma_write_cm_event's USER events and rdma_resolve_addrinfo's
# ADDRINFO_RESOLVED, with rdma_query_addrinfo. An IPv6 link-local destination leaves through
# the interface its scope ID names (rdma_cm's bound_dev_if), even where another interface's
# route to fe80::/64 is preferred: rping over cepm to fe80::77:2%veth0, with a dummy netdev's
# route to fe80::/64 at a lower metric than veth0's; and from the source fe80::77:1%veth0 to
# fe80::77:2 without a scope, where the source's scope names the interface
# (cma_check_linklocal). Two hosts only: on loopback every address
# on the link is this host's own. rdma_get_devices lists a device added while the process
# runs (rdma_devices: rxe2 on a dummy netdev, between two calls), as librdmacm's
# sync_devices_list does.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology"; exit "$KSFT_SKIP"; }
need_library
need_progs rdma_async_resolve rdma_user_events rdma_devices
ktap_set_plan 6

out=$CEPM_ROOT/out/rdmacm_async.$$
UNROUTABLE=198.51.100.1
trap 'kill $(jobs -p) 2>/dev/null; wait; ip route del unreachable $UNROUTABLE/32 2>/dev/null; ip link del cepm_decoy 2>/dev/null; rdma link del rxe2 2>/dev/null; ip link del cepm_dev2 2>/dev/null; ip addr del fe80::77:1/64 dev veth0 2>/dev/null; topology_down; rm -f "$out".*' EXIT
up() { topology_up && ip route add unreachable $UNROUTABLE/32; }
ktap_check "topology $TOPOLOGY is up, $UNROUTABLE unreachable" up

env LD_LIBRARY_PATH="$LIB" timeout 120 "$progs/rdma_async_resolve" 10.77.0.2 10.77.0.99 $UNROUTABLE 1000 >"$out.run" 2>&1
rc=$?
show_file '# ' "$out.run"
ended() { [ $rc = 0 ] && file_has '^rdma_async_resolve: end 0' "$out.run"; }
ktap_check "1000 IDs resolved from one thread, each call returning before its result; the events arrive ($rc)" ended

env LD_LIBRARY_PATH="$LIB" timeout 60 "$progs/rdma_user_events" 10.77.0.2 7191 >"$out.user" 2>&1
rc=$?
show_file '# ' "$out.user"
user_ok() { [ $rc = 0 ] && file_has '^rdma_user_events: end 0' "$out.user"; }
ktap_check "RDMACM_1.4: rdma_write_cm_event's USER events, rdma_resolve_addrinfo's event and result ($rc)" user_ok

# Link-local addresses of our own on both ends, and a decoy: a dummy netdev whose route to
# fe80::/64 the routing table prefers to veth0's.
link_local_up() {
	ip addr add fe80::77:1/64 dev veth0 nodad &&
		"${SERVER[@]}" ip addr add fe80::77:2/64 dev veth1 nodad &&
		wait_until 20 has_gid rxe0 fe80:0000:0000:0000:0000:0000:0077:0001 &&
		wait_until 20 has_gid rxe1 fe80:0000:0000:0000:0000:0000:0077:0002 &&
		ip link add cepm_decoy type dummy && ip link set cepm_decoy up &&
		ip -6 route add fe80::/64 dev cepm_decoy metric 1 &&
		ip -6 route get fe80::77:2 | grep -q 'dev cepm_decoy'
}
link_local_up || ktap_print_msg "link-local setup failed"
tool_pair scoped "cepm_listens 7192" -- \
	"${SERVER[@]}" env LD_LIBRARY_PATH="$LIB" timeout 60 rping -s -a fe80::77:2%veth1 -p 7192 -C 3 -v -V -- \
	env LD_LIBRARY_PATH="$LIB" timeout 60 rping -c -a fe80::77:2%veth0 -p 7192 -C 3 -v -V
scoped_pings() { [ "$crc$src" = 00 ] && [ "$(grep -c '^ping data: rdma-ping-' "$out.scoped-c")" = 3 ]; }
ktap_check "rping to fe80::77:2%veth0 leaves by veth0, not by the preferred route's netdev ($crc, $src)" scoped_pings
tool_pair scoped_source "cepm_listens 7193" -- \
	"${SERVER[@]}" env LD_LIBRARY_PATH="$LIB" timeout 60 rping -s -a fe80::77:2%veth1 -p 7193 -C 3 -v -V -- \
	env LD_LIBRARY_PATH="$LIB" timeout 60 rping -c -I fe80::77:1%veth0 -a fe80::77:2 -p 7193 -C 3 -v -V
source_pings() { [ "$crc$src" = 00 ] && [ "$(grep -c '^ping data: rdma-ping-' "$out.scoped_source-c")" = 3 ]; }
ktap_check "rping from fe80::77:1%veth0 to fe80::77:2 leaves by the source's interface ($crc, $src)" source_pings

env LD_LIBRARY_PATH="$LIB" timeout 90 "$progs/rdma_devices" "$out.added" >"$out.devices" 2>&1 &
dpid=$!
wait_until 30 file_has '^first: ' "$out.devices"
ip link add cepm_dev2 type dummy && ip link set cepm_dev2 up &&
	rdma link add rxe2 type rxe netdev cepm_dev2 && wait_until 20 port_listed rxe2 1
touch "$out.added"
wait $dpid
rc=$?
show_file '# ' "$out.devices"
# The second call lists one device more than the first, rxe2 among them.
added_listed() {
	local first then
	first=$(awk '$1 == "first:" { print $2 }' "$out.devices")
	then=$(awk '$1 == "then:" { print $2 }' "$out.devices")
	[ $rc = 0 ] && [ -n "$first" ] && [ "$then" = $((first + 1)) ] && file_has '^then: .* rxe2( |$)' "$out.devices"
}
ktap_check "rdma_get_devices lists rxe2, added after its first call ($rc)" added_listed
rdma link del rxe2
ip link del cepm_dev2
ktap_finished
