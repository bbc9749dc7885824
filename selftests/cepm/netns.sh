#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A CM per network namespace, in the shared RDMA netns mode (docs/abi.md, "Network
# namespaces"): the host and the peer namespace ($PEER_NS: veth1, 10.77.0.2, and rxe1 on it)
# each have their own listens, ports and CEPs.
# 1. rping over cepm's library serves port 7190 on every address in both namespaces at once,
#    and each server gets the client of the other namespace.
# 2. A REQ that arrives on rxe1 (whose GID's netdev is in the peer namespace) is not offered to
#    a listener of the host namespace: REJ 8, as for a service nobody listens on.
# 3. The peer namespace's files see none of the host's CEPs; the host's operator sees them.
# 4. The host namespace cannot send from rxe1's GID (EADDRNOTAVAIL).
# 5. A container: root hands an unprivileged user the peer namespace, which the user enters in
#    a user namespace of its own; rping over the library connects from there to a server in
#    the host namespace, and the same user outside sees none of its CEPs.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology (the peer namespace)"; exit "$KSFT_SKIP"; }
command -v rping >/dev/null || { ktap_skip_all "rping missing"; exit "$KSFT_SKIP"; }
need_library
ktap_set_plan 14

USER_A=65534
out=$CEPM_ROOT/out/netns.$$
work=$(mktemp -d)
modes=
trap 'kill $(jobs -p) 2>/dev/null; wait; eval "$modes"; topology_down; rm -rf "$out".* "$work"' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
# The modes of the device files the container's user is given, put back at the end.
modes=$(stat -c 'chmod %a %n' /dev/cepm /dev/infiniband/uverbs*)
read -r HOST_MAC </sys/class/net/veth0/address
ON_PEER_OVER_CEPM=("${PEER[@]}" env LD_LIBRARY_PATH="$LIB")
TCP=0x0106

# lists_no_cep CEPMCTL...: `CEPMCTL list` (with its prefixes) shows no CEP.
lists_no_cep() { [ "$("$@" list | head -n1)" = "0 CEP(s)" ]; }
# listens_on PORT N: N CEPs listen on rdma_cm's TCP port PORT, as the host's operator sees them.
listens_on() {
	local id state service n=0
	while read -r id state service _; do
		[ "$state" = LISTEN ] && ((service == $(ip_service_id $TCP "$1"))) && n=$((n + 1))
	done < <("$CEPMCTL" list)
	[ "$n" = "$2" ]
}

# 1. Two servers on one port, one per namespace, each bound to every address.
"${OVER_CEPM[@]}" timeout 120 rping -s -a 0.0.0.0 -p 7190 -C 5 -v >"$out.host-s" 2>&1 &
host_s=$!
"${ON_PEER_OVER_CEPM[@]}" timeout 120 rping -s -a 0.0.0.0 -p 7190 -C 5 -v >"$out.peer-s" 2>&1 &
peer_s=$!
ktap_check "rping -s on 0.0.0.0 port 7190 listens in both namespaces at once" wait_until 30 listens_on 7190 2
"${OVER_CEPM[@]}" timeout 120 rping -c -a 10.77.0.2 -p 7190 -C 5 -v >"$out.host-c" 2>&1
host_c=$?
"${ON_PEER_OVER_CEPM[@]}" timeout 120 rping -c -a 10.77.0.1 -p 7190 -C 5 -v >"$out.peer-c" 2>&1
peer_c=$?
wait $host_s
host_src=$?
wait $peer_s
peer_src=$?
for side in host-s peer-s host-c peer-c; do show_file "# $side: " "$out.$side"; done
five_pings() { [ "$(grep -c '^ping data: rdma-ping-' "$1")" = 5 ]; }
five_pings_each_way() { five_pings "$out.host-c" && five_pings "$out.peer-c"; }
ktap_check "the host's client reaches the peer's server, both exit 0 ($host_c, $peer_src)" \
	sh -c "test $host_c = 0 && test $peer_src = 0"
ktap_check "the peer's client reaches the host's server, both exit 0 ($peer_c, $host_src)" \
	sh -c "test $peer_c = 0 && test $host_src = 0"
ktap_check "... 5 pings each way" five_pings_each_way

# 2. A host listener does not take a REQ that arrives on rxe1.
SID2=0x0000000001069001
"$CEPMCTL" accept --service-id $SID2 --cm-only --timeout-ms 30000 >"$out.accept" 2>&1 &
accept_pid=$!
ktap_check "cepmctl accept listens in the host namespace" wait_until 30 list_has_state LISTEN $SID2
cm_connect connect2 $SID2 rxe0 10.77.0.2 "$PEER_MAC" 30000
rc=$?
ktap_check "a REQ arriving on rxe1 for a host-namespace listen gets REJ 8 ($rc)" \
	sh -c "test $rc != 0 && grep -q 'got REJ_RECEIVED (status 8)' '$out.connect2'"
ktap_check "... and the host listener was offered no request" sh -c "! grep -q 'REQ_RECEIVED' '$out.accept'"

kill $accept_pid 2>/dev/null
wait $accept_pid 2>/dev/null

# 3. While the host listens: the peer namespace sees none of its CEPs.
SID4=0x0000000001069004
"$CEPMCTL" hold-listens --service-ids $SID4 --hold-ms 60000 >"$out.hold" 2>&1 &
hold_pid=$!
ktap_check "the host's operator lists the host's listen" wait_until 30 list_has_state LISTEN $SID4
ktap_check "root in the peer namespace lists no CEP of the host's" lists_no_cep "${PEER[@]}" "$CEPMCTL"
kill $hold_pid 2>/dev/null
wait $hold_pid 2>/dev/null

# 4. rxe1's GID belongs to the peer namespace: the host cannot send from it.
cm_connect connect3 $SID2 rxe1 10.77.0.1 "$HOST_MAC" 10000
rc=$?
ktap_check "CONNECT from the host namespace with rxe1's GID: EADDRNOTAVAIL ($rc)" \
	sh -c "test $rc != 0 && grep -q 'os error 99' '$out.connect3'"

# 5. A container. The user's copies of the library and cepmctl, which $CEPM_ROOT may hide.
chmod 0755 "$work"
install -m 0755 "$LIB/librdmacm.so.1" "$CEPMCTL" "$work/"
chmod 0666 /dev/cepm /dev/infiniband/uverbs*
AS_USER=(setpriv --reuid=$USER_A --regid=$USER_A --clear-groups)
"${OVER_CEPM[@]}" timeout 120 rping -s -a 10.77.0.1 -p 7191 -v >"$out.ctr-s" 2>&1 &
ctr_s=$!
ktap_check "rping -s listens on 10.77.0.1 port 7191" wait_until 30 cepm_listens 7191
"${PEER[@]}" "${AS_USER[@]}" unshare --user --map-root-user \
	env LD_LIBRARY_PATH="$work" timeout 120 rping -c -a 10.77.0.1 -p 7191 >"$out.ctr-c" 2>&1 &
ctr_c=$!
established() { list_has_state ESTABLISHED; }
ktap_check "rping over the library, as user $USER_A in a user namespace in $PEER_NS, connects to the host" \
	wait_until 30 established
ktap_check "... and user $USER_A outside the namespace lists none of its CEPs" \
	lists_no_cep "${AS_USER[@]}" "$work/cepmctl"
kill $ctr_c $ctr_s 2>/dev/null
wait $ctr_c $ctr_s 2>/dev/null
show_file "# container's rping: " "$out.ctr-c" 3
ktap_finished
