#!/usr/bin/env bash
# Runs inside each guest of scripts/vm-pair.
#   vm-pair-guest.sh a CMD...   set up this guest, then run CMD (guest A, the one under test)
#   vm-pair-guest.sh b          set up this guest, then serve guest A's commands (the peer)
#   vm-pair-guest.sh peer CMD   from guest A: run the shell command CMD on guest B, print its
#                               output (stdout and stderr together) and return its exit status
#
# Each guest has one virtio NIC on the link between them (found by the MAC scripts/vm-pair
# gave it), PAIR_IP/24 on it, rxe0 over it, and the connection manager PAIR_STACK says:
#   stock  the kernel's ib_cm, rdma_cm and rdma_ucm, with rdma-core's librdmacm
#   cepm   cepm.ko (PAIR_KO) without ib_cm, and cepm's librdmacm (PAIR_RDMACM) first in
#          LD_LIBRARY_PATH for every program of the guest
# The command channel is a virtio-serial port named cepm.pair in both guests, whose QEMU
# chardevs are the two ends of one unix socket: bytes written in one guest are read in the
# other.  Requests and replies are one line each, their payloads base64, so that any output
# crosses: A sends "RUN ID B64(CMD)", B replies "DONE ID RC B64(OUTPUT)"; "QUIT" ends B.
set -euo pipefail

die() { echo "vm-pair-guest: $*" >&2; exit 1; }

# port: the device of the cepm.pair port (udev may not have made its /dev/virtio-ports link).
port() {
	local d
	for d in /sys/class/virtio-ports/*; do
		[ "$(cat "$d/name" 2>/dev/null)" = cepm.pair ] && { echo "/dev/${d##*/}"; return; }
	done
	return 1
}

# nic: the interface that carries PAIR_MAC.
nic() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "${PAIR_MAC:?}" ] && { echo "${d##*/}"; return; }
	done
	return 1
}

setup() {
	local dev
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	# A distribution kernel has virtio_console and virtio_net as modules, and their devices
	# may appear a moment after they load.
	modprobe virtio_console 2>/dev/null || :
	modprobe virtio_net 2>/dev/null || :
	for _ in $(seq 100); do dev=$(nic) && break; sleep 0.1; done
	[ -n "${dev:-}" ] || die "no interface with MAC $PAIR_MAC"
	ip addr add "${PAIR_IP:?}/24" dev "$dev"
	ip link set "$dev" up
	modprobe rdma_rxe
	rdma link add rxe0 type rxe netdev "$dev"
	case ${PAIR_STACK:?} in
	stock)
		modprobe ib_uverbs
		modprobe rdma_ucm
		;;
	cepm)
		modprobe ib_uverbs
		modprobe ib_umad
		! lsmod | grep -q '^ib_cm ' || die "ib_cm is loaded; cepm cannot own the CM class"
		insmod "${PAIR_KO:?}"
		[ -f "${PAIR_RDMACM:?}/librdmacm.so.1" ] || die "$PAIR_RDMACM/librdmacm.so.1 is missing: make user"
		export LD_LIBRARY_PATH=$PAIR_RDMACM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		;;
	*) die "PAIR_STACK must be stock or cepm" ;;
	esac
	echo "vm-pair-guest: $(uname -r), $PAIR_STACK stack, rxe0 on $dev $PAIR_IP, up $(cut -d" " -f1 /proc/uptime) s" >&2
}

# serve: guest B's loop.  Reads return at once (EOF) while no QEMU holds the other end of
# the socket, so the port is reopened until guest A's QEMU connects.
serve() {
	local dev verb id b64 rc out=/tmp/vm-pair-out
	for _ in $(seq 100); do dev=$(port) && break; sleep 0.1; done
	[ -n "${dev:-}" ] || die "no virtio port cepm.pair"
	while :; do
		exec 3<>"$dev"
		while IFS=' ' read -r verb id b64 <&3; do
			case $verb in
			RUN)
				# Output goes to a file, not a pipe: a server CMD leaves in the background
				# (rping -s ... &) must not hold the reply back.
				rc=0
				bash -c "$(base64 -d <<<"$b64")" </dev/null >"$out" 2>&1 || rc=$?
				echo "DONE $id $rc $(base64 -w0 "$out")" >&3
				;;
			QUIT) echo "vm-pair-guest: guest A is done" >&2; return 0 ;;
			esac
		done
		exec 3>&-
		sleep 0.2
	done
}

# open_port: the port as fd 3.  A virtio port opens once at a time (EBUSY), so a client
# waits for the one before it to close.
open_port() {
	local dev
	dev=$(port) || die "no virtio port cepm.pair"
	for _ in $(seq 300); do
		{ exec 3<>"$dev"; } 2>/dev/null && return 0
		sleep 0.1
	done
	die "$dev stays busy"
}

# b_down: scripts/vm-pair saw guest B's QEMU end (PAIR_RUN is the run's directory in out/).
b_down() { [ -e "${PAIR_RUN:?}/b.down" ]; }

# peer CMD: guest A's client.  A request may reach B before it serves, or be lost while B's
# end of the channel is not open yet, so each waits PEER_WAIT seconds for its reply (default
# 600), and B's readiness is awaited once with short probes first (wait_peer).  Replies to
# earlier, abandoned requests are skipped by their ID.  sed reads the reply, a block at a
# time (bash's read takes a byte a syscall, 10 KB/s here); it ends at EOF, which the port
# gives once guest B's QEMU is gone.
peer() {
	local id reply rc b64
	open_port
	id=$$.$RANDOM
	# A write blocks while no QEMU holds the channel's other end (guest B's is gone).
	if b_down || ! timeout 10 cat >&3 <<<"RUN $id $(printf '%s' "$*" | base64 -w0)"; then
		exec 3>&-
		echo "vm-pair-guest: the channel to guest B is closed; not run: $*" >&2
		return 124
	fi
	reply=$(timeout "${PEER_WAIT:-600}" sed -n "/^DONE $id /{p;q}" <&3) || :
	exec 3>&-
	if [ -z "$reply" ]; then
		echo "vm-pair-guest: no reply from guest B to: $*" >&2
		return 124
	fi
	IFS=' ' read -r _ _ rc b64 <<<"$reply"
	base64 -d <<<"$b64"
	return "$rc"
}

# wait_peer: guest A waits for B to serve: probes of 2 s each, for PEER_BOOT_WAIT seconds.
wait_peer() {
	local deadline=$((SECONDS + ${PEER_BOOT_WAIT:-600}))
	while [ $SECONDS -lt $deadline ]; do
		PEER_WAIT=2 peer true 2>/dev/null && return 0
		! b_down || die "guest B is down before it served"
	done
	die "guest B did not answer within ${PEER_BOOT_WAIT:-600} s"
}

role=${1:?a, b or peer}
shift
case $role in
a)
	setup
	wait_peer
	echo "vm-pair-guest: guest B answers, A up $(cut -d" " -f1 /proc/uptime) s" >&2
	rc=0
	PEER="$0 peer" "$@" || rc=$?
	(b_down || { open_port && timeout 10 cat >&3 <<<QUIT; }) || :
	exit "$rc"
	;;
b)
	setup
	serve
	;;
peer) peer "$@" ;;
*) die "unknown role $role" ;;
esac
