#!/usr/bin/env bash
# The part of `make demo` that runs inside the VM (rxe0 and cepm.ko are already set up).
set -euo pipefail
cd "$CEPM_ROOT"
# The selftests' helpers: the second host and its stock stack, and the waits.
. selftests/cepm/lib.sh
cepmctl=$CEPMCTL
show() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
# show_bg FILE CMD...: shows CMD, then runs it in the background for a minute at most, its
# output into FILE; $! is its process.
show_bg() {
	local file=$1
	shift
	printf '\033[1m$ %s &\033[0m\n' "$*"
	timeout 60 "$@" >"$file" 2>&1 &
}
fail() { printf '\n\033[1;31mdemo FAILED: %s\033[0m\n' "$*" >&2; exit 1; }

echo "== cepm demo: kernel $(uname -r), Soft-RoCE device rxe0 on veth0"
show rdma link show
show lsmod
show sh -c "dmesg | grep 'cepm: '"
show ls -l /dev/cepm
show "$cepmctl" ports
echo
echo "== Send CM MADs at rxe0 port 1 (ib_umad loopback to its own RoCE v2 GID) and watch the counters"
show "$cepmctl" send-mad rxe0 1 REQ
show "$cepmctl" send-mad rxe0 1 DREQ --count 2
show "$cepmctl" send-mad rxe0 1 SIDR_REQ
# The MADs are delivered asynchronously: wait for the last one to be counted.
for _ in $(seq 100); do [ "$("$cepmctl" rx-count rxe0 1 SIDR_REQ)" -ge 1 ] && break; sleep 0.05; done
show "$cepmctl" ports
echo
echo "== A connection through cepm: cepmctl accept listens, cepmctl connect sends the REQ;"
echo "   REP, RTU, QPs to RTS with cepm's attributes, then a verified RC ping-pong"
modprobe ib_uverbs
sid=0x0000000001064e2a
"$cepmctl" accept --service-id $sid --iterations 100 > /tmp/demo-accept.log 2>&1 &
apid=$!
for _ in $(seq 200); do grep -q '^accept: listening' /tmp/demo-accept.log && break; sleep 0.05; done
show "$cepmctl" connect --service-id $sid --iterations 100
wait $apid
echo
echo "(the passive side's trace)"
cat /tmp/demo-accept.log
show "$cepmctl" ports

echo
echo "== rdma-core's rping, unmodified, over cepm's librdmacm, against the stock Linux CM"
echo "   This host: cepm manages rxe0 (10.77.0.1). The other host, network namespace $PEER_NS:"
echo "   rxe1 on veth1 (10.77.0.2) with the stock stack, the kernel's rdma_cm and ib_cm and"
echo "   rdma-core's own librdmacm. cepm is reloaded with devices=rxe0 to leave rxe1 to ib_cm."
stock_up || fail "the stock host in namespace $PEER_NS did not come up"
show "$cepmctl" ports
port=7174 pings=50 out=/tmp/demo-rping
echo
echo "The server on this host: cepm-run puts cepm's librdmacm.so.1 in front of rdma-core's, so"
echo "rping's rdma_cm calls reach /dev/cepm."
show_bg $out.server rdmacm/cepm-run rping -s -a 10.77.0.1 -p $port -S 64
spid=$!
if ! wait_until 30 cepm_listens $port 2>/dev/null; then
	cat $out.server
	fail "rping -s over cepm did not listen"
fi
echo "rping's rdma_listen is a CEP of cepm, listening on rdma_cm's service ID for TCP port $port,"
echo "$(ip_service_id $TCP $port):"
show "$cepmctl" list
echo
echo "The client on the other host, stock rping: $pings pings, which the server reads and writes"
echo "back by RDMA; -V checks every echo."
show_bg $out.client ip netns exec "$PEER_NS" \
	rping -c -a 10.77.0.1 -I 10.77.0.2 -p $port -C $pings -S 64 -V -v
cpid=$!
# A listing taken while the connection is up, shown as it was taken.
listing=
until exited $cpid; do
	listing=$("$cepmctl" list) && [[ $listing == *ESTABLISHED* ]] && break
	listing=
	nap 0.05
done
crc=0 src=0
wait $cpid || crc=$?
# The server of a client that failed would wait out its timeout for another.
[ $crc = 0 ] || kill $spid 2>/dev/null
wait $spid || src=$?
if [ -n "$listing" ]; then
	printf '\n\033[1m$ %s\033[0m   (taken while rping ran)\n' "$cepmctl list"
	echo "$listing"
	echo "Beside the listener, the connection's passive end is a CEP of cepm, ESTABLISHED; the"
	echo "active end belongs to the stock ib_cm on the other host."
	echo
fi
verified=$(grep -c '^ping data: rdma-ping-' $out.client || :)
echo "client: $verified pings verified, exit status $crc; server: exit status $src"
if [ $crc != 0 ] || [ $src != 0 ] || [ "$verified" != $pings ]; then
	echo "(the client's output)"
	cat $out.client
	echo "(the server's output)"
	cat $out.server
	fail "rping over cepm's librdmacm against the stock stack"
fi
tail -n 2 $out.client
[ -n "$listing" ] || fail "cepmctl list never showed rping's connection ESTABLISHED while it ran"
show "$cepmctl" ports
echo "The connection is gone; cepm's counters for rxe0 show the CM messages of its life, each"
echo "exchanged with the stock ib_cm."
stock_down || fail "the stock host did not go away"
wait_until 20 port_listed rxe0 1 || fail "cepm did not take rxe0 back"

echo
echo "== Delete the RDMA device: cepm releases the port"
show rdma link delete rxe0
for _ in $(seq 100); do "$cepmctl" ports | grep -q '0 managed' && break; sleep 0.05; done
show "$cepmctl" ports
show rmmod cepm
echo
echo "demo done"
