# SPDX-License-Identifier: GPL-2.0
# Shared helpers for cepm's selftests.  Source it; KTAP output through the kernel's own helpers.

: "${CEPM_ROOT:?run the selftests through scripts/vm (it sets CEPM_ROOT)}"
: "${CEPM_KDIR:?run the selftests through scripts/vm (it sets CEPM_KDIR)}"
. "$CEPM_KDIR/tools/testing/selftests/kselftest/ktap_helpers.sh"

CEPMCTL=${CEPMCTL:-$CEPM_ROOT/target/release/cepmctl}
CEPM_KO=$CEPM_ROOT/cepm.ko
RXE_DEV=${RXE_DEV:-rxe0}
RXE_NETDEV=${RXE_NETDEV:-veth0}

# ktap_check DESCRIPTION CMD...: one KTAP result from CMD's exit status.  Unlike the kernel's
# ktap_test_result it keeps CMD's arguments intact (no word splitting).
ktap_check() {
	local description=$1
	shift
	if "$@"; then
		ktap_test_pass "$description"
	else
		ktap_test_fail "$description"
	fi
}

# wait_until SECONDS CMD...: poll CMD every 50 ms until it succeeds; fail after SECONDS.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}

cepm_loaded() { [ -d /sys/module/cepm ]; }

# Number of ports cepm manages right now.
managed_ports() { "$CEPMCTL" ports | sed -n 's/^cepm ABI [0-9]*, \([0-9]*\) managed port.*/\1/p'; }

# Connection endpoints alive in the module, all processes together.
live_ceps() { "$CEPMCTL" ports | sed -n 's/^cepm ABI [0-9]*, [0-9]* managed port(s), \([0-9]*\) CEP.*/\1/p'; }

ceps_are() { [ "$(live_ceps)" = "$1" ]; }

port_listed() { "$CEPMCTL" ports | grep -q "^$1 port $2 "; }
port_not_listed() { ! port_listed "$@"; }

# dmesg lines logged since mark_dmesg.
mark_dmesg() { DMESG_MARK=$(dmesg | wc -l); }
dmesg_since_mark() { dmesg | tail -n +"$((DMESG_MARK + 1))"; }

# A second "host": veth1 moved into network namespace $PEER_NS with 10.77.0.2/24 and rxe1 on
# it, managed by cepm like rxe0.  peer_ns_down puts everything back (veth1 must come home
# before the namespace goes: deleting it there would delete veth0 too).
PEER_NS=cepm_peer
peer_has_gid() { grep -qs 'ffff:0a4d:0002' /sys/class/infiniband/rxe1/ports/1/gids/*; }
peer_ns_up() {
	modprobe ib_uverbs
	ip netns add $PEER_NS &&
	ip link set veth1 netns $PEER_NS &&
	ip -n $PEER_NS addr add 10.77.0.2/24 dev veth1 &&
	ip -n $PEER_NS link set veth1 up &&
	ip -n $PEER_NS link set lo up &&
	ip netns exec $PEER_NS rdma link add rxe1 type rxe netdev veth1 &&
	wait_until 20 port_listed rxe1 1 &&
	wait_until 20 peer_has_gid &&
	PEER_MAC=$(ip -n $PEER_NS -br link show veth1 | awk '{print $3}')
}
peer_ns_down() {
	rdma link delete rxe1 2>/dev/null
	ip -n $PEER_NS link set veth1 netns 1 2>/dev/null
	ip netns del $PEER_NS 2>/dev/null
	ip link set veth1 up 2>/dev/null
}

need_root() { [ "$(id -u)" = 0 ] || { ktap_skip_all "needs root"; exit "$KSFT_SKIP"; }; }
