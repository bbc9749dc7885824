#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_resolve_addr over cepm's librdmacm returns at once and completes by event, as
# librdmacm's does over the kernel's rdma_cm (rdmacm_stock.sh runs the same program on the
# stock stack, as the oracle): rdma_async_resolve resolves 1000 IDs toward the peer (10.77.0.2)
# from one thread and collects their ADDR_RESOLVED; toward 10.77.0.99, on the link but answered
# by no one, the call returns before its ADDR_ERROR exists; toward 198.51.100.1 (an
# "unreachable" route) the call fails itself; a synchronous ID waits. rdma_user_events checks
# RDMACM_1.4's asynchronous calls: rdma_write_cm_event's USER events and rdma_resolve_addrinfo's
# ADDRINFO_RESOLVED, with rdma_query_addrinfo. Two hosts only: on loopback every address on
# the link is this host's own.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology"; exit "$KSFT_SKIP"; }
need_library
need_progs rdma_async_resolve rdma_user_events
ktap_set_plan 3

out=$CEPM_ROOT/out/rdmacm_async.$$
UNROUTABLE=198.51.100.1
trap 'ip route del unreachable $UNROUTABLE/32 2>/dev/null; topology_down; rm -f "$out".*' EXIT
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
ktap_finished
