#!/usr/bin/env bash
# Runs inside the test guest (scripts/vm): prepare Soft-RoCE and cepm.ko, then run the command.
#   rdma_rxe loaded, veth0 (10.77.0.1/24) <-> veth1, rxe0 on veth0, ib_umad loaded,
#   cepm.ko inserted (the in-tree ib_cm stays unloaded: both cannot own the CM class).
set -euo pipefail

setup() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	modprobe rdma_rxe
	modprobe ib_umad
	ip link add veth0 type veth peer name veth1
	ip addr add 10.77.0.1/24 dev veth0
	ip link set veth0 up
	ip link set veth1 up
	rdma link add rxe0 type rxe netdev veth0
	if lsmod | grep -q '^ib_cm '; then
		echo "vm-guest: ib_cm is loaded; cepm cannot own the CM class" >&2
		return 1
	fi
	insmod "${CEPM_KO:-$CEPM_ROOT/cepm.ko}"
}

# scripts/vm said virtio-fs when it found virtiofsd; vng falls back to 9p if it did not start.
if grep -q '^[^ ]* / 9p ' /proc/mounts; then
	echo "vm-guest: the root is over 9p, not virtio-fs: every process start is slower (docs/design.md)" >&2
fi

if [ "${CEPM_NO_SETUP:-0}" != 1 ]; then
	setup
fi
exec "$@"
