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
	insmod "${CEPM_KO:?the cepm.ko to load (scripts/vm sets it)}"
}

# Under TCG a process start costs 0.1 to 0.3 s, and a good part of it is virtio-fs round trips:
# each library the program maps is opened, flushed and released there, through a symlink or
# two (/lib, the soname) that FUSE cannot cache.  The tests start thousands of processes, so
# the libraries of the usual ones (CEPM_VM_HOT_LIBS, chosen by scripts/vm) are copied into
# the guest's memory once (about 15 MB, 1 s) and found first through LD_LIBRARY_PATH (a
# test's own LD_LIBRARY_PATH, for cepm's librdmacm, still wins); the dynamic loader's copy is
# mounted over the original; and PATH leaves out the symlinks /bin and /sbin into /usr.
# Same files, fewer round trips: about 30 ms less per process start (docs/design.md).
libs_in_ram() {
	local dir=/run/cepm-lib entry entries=() path=()
	mkdir -p $dir
	# shellcheck disable=SC2086 # a list of paths, without blanks (ldd's)
	cp -L $CEPM_VM_HOT_LIBS $dir/
	export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	if [ -n "${CEPM_VM_LOADER:-}" ] && [ -f "$CEPM_VM_LOADER" ]; then
		cp "$CEPM_VM_LOADER" $dir/.loader && mount --bind $dir/.loader "$CEPM_VM_LOADER"
	fi
	IFS=: read -ra entries <<<"$PATH"
	for entry in "${entries[@]}"; do
		[ -d "$entry" ] && ! [ -L "$entry" ] && path+=("$entry")
	done
	[ ${#path[@]} = 0 ] || PATH=$(IFS=:; echo "${path[*]}")
}

# scripts/vm said virtio-fs when it found virtiofsd; vng falls back to 9p if it did not start.
if grep -q '^[^ ]* / 9p ' /proc/mounts; then
	echo "vm-guest: the root is over 9p, not virtio-fs: every process start is slower (docs/design.md)" >&2
fi

[ -z "${CEPM_VM_HOT_LIBS:-}" ] || libs_in_ram
if [ "${CEPM_NO_SETUP:-0}" != 1 ]; then
	setup
fi
# What the guest got, for scripts/check-vm-log.sh: the command's words and the text the host
# announced (scripts/vm's CEPM_VM_ANNOUNCE), each counted and checksummed.
if [ -n "${CEPM_ANNOUNCE:-}" ]; then
	# shellcheck disable=SC2086 # the announced text's words, one a line
	echo "vm-guest: $# arguments, $(printf '%s\n' "$@" | cksum); announced $(printf '%s\n' $CEPM_ANNOUNCE | cksum)" >&2
fi
exec "$@"
