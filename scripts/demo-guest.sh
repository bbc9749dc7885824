#!/usr/bin/env bash
# The part of `make demo` that runs inside the VM (rxe0 and cepm.ko are already set up).
set -euo pipefail
cepmctl=$CEPM_ROOT/target/release/cepmctl
show() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

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
echo "== Delete the RDMA device: cepm releases the port"
show rdma link delete rxe0
for _ in $(seq 100); do "$cepmctl" ports | grep -q '0 managed' && break; sleep 0.05; done
show "$cepmctl" ports
show rmmod cepm
echo
echo "demo done"
