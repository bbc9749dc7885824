#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Not a test: a fixture for runner_isolation.sh.  It breaks the guest every way a failing
# test has been seen to (cepm reloaded with other parameters, the stock CM loaded, the peer
# namespace and rxe1 left behind, a lossy qdisc, a fixed neighbour, fault injection armed,
# stray processes, one of them in its own session), fails a check after a wait that gives up,
# then hangs and ignores SIGTERM, so that
# only the runner's time limit and its KILL end it.
. "$CEPM_ROOT/selftests/cepm/lib.sh"
rmmod cepm && insmod "$CEPM_KO" event_queue_max=16 timewait_ms=5
modprobe rdma_ucm
peer_ns_create
peer_neighbours_fixed
tc qdisc add dev veth0 root netem loss 50%
echo 0x14 >$CEPM_DEBUGFS/drop_rx_attr && echo 3 >$CEPM_DEBUGFS/drop_rx_count
sleep 1000 &
setsid sleep 1000 &
"${PEER[@]}" sleep 1000 &
# The time it took shows in the log: runner_isolation.sh's limit for this fixture must exceed it.
echo "hang_and_break: guest broken in ${SECONDS} s"
echo "hang_and_break: guest broken, now hanging"
# A failed check and a wait that gave up, as a failing test prints them: the runner's digest
# of failures, at the end of its output, must name them (runner_isolation.sh).
echo "not ok 1 hang_and_break: a check that fails on purpose"
wait_until 1 false
trap '' TERM
while :; do sleep 1; done
