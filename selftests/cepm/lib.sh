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

need_root() { [ "$(id -u)" = 0 ] || { ktap_skip_all "needs root"; exit "$KSFT_SKIP"; }; }
