#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Middleware that RDMA users deploy, unmodified, with cepm's librdmacm on both ends, and the
# endpoint calls it makes:
# - UCX's ucp_client_server (the example libucx-dev ships, built as it is), its connection
#   made by UCX's rdmacm CM over rc_verbs, in each of its modes (tag, stream, active
#   messages). Its server reads the request's QP attributes (rdma_init_qp_attr, RTR) before
#   it accepts, as UCX's uct rdmacm server does.
# - libfabric's fi_pingpong (libfabric-bin; the verbs provider's MSG endpoints, which connect
#   through librdmacm). Its server's fi_getinfo binds an ID to 127.0.0.1 to learn its domain,
#   as the verbs provider's vrb_get_rai_id does, which rdma_cm takes as a wildcard bind. The
#   two ends exchange 10 messages of 4 KiB each way.
# - rdma-core's rdma_xserver and rdma_xclient, in RC mode (-c r: rdma_create_ep,
#   rdma_get_request, one message); in XRC mode (-c x) the client's XRC send QP, which has no
#   receive queue, is refused by rxe, which has no XRC: rdma_create_ep fails with EOPNOTSUPP,
#   as on the stock stack.
# In the loopback topology both ends are on rxe0; in two-hosts the server runs in the peer
# namespace on rxe1. Afterwards no CEP is left.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
for tool in fi_pingpong rdma_xserver rdma_xclient; do
	command -v "$tool" >/dev/null || { ktap_skip_all "$tool missing"; exit "$KSFT_SKIP"; }
done
need_progs ucp_client_server
UCP=$progs/ucp_client_server
need_library
ktap_set_plan 9

out=$CEPM_ROOT/out/middleware.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
case $TOPOLOGY in
two-hosts) ADDR=10.77.0.2 ;;
*) ADDR=10.77.0.1 ;;
esac
ON_SERVER_OVER_CEPM=("${SERVER[@]}" env LD_LIBRARY_PATH="$LIB")

# UCX: one message each mode; its server serves until stopped. Its output is line-buffered so
# that what it printed survives the stop.
export UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_TLS=rc_verbs
ucx_ok() { [ "$crc" = 0 ] && file_has '^UCX data message was received' "$out.$1-s" && file_has 'UCP TEST SUCCESS' "$out.$1-s"; }
for mode in tag stream am; do
	stop_server=1 again_if_ucx_aborted ucx-$mode ucx_ok tool_pair ucx-$mode "cepm_listens 13337" -- \
		"${ON_SERVER_OVER_CEPM[@]}" UCX_NET_DEVICES="$SERVER_DEV:1" timeout 120 \
		stdbuf -oL "$UCP" -l $ADDR -p 13337 -c $mode -- \
		"${OVER_CEPM[@]}" UCX_NET_DEVICES="$RXE_DEV:1" timeout 120 "$UCP" -a $ADDR -p 13337 -c $mode
	ktap_check "UCX ucp_client_server -c $mode over UCX's rdmacm CM: the client exits 0, the server received its message ($crc)" ucx_ok ucx-$mode
done

# fi_pingpong's server listens on its TCP control port (47592) before it opens any endpoint.
FI_CTRL_PORT=47592
ctrl_listens() { "${SERVER[@]}" ss -Hltn "sport = :$FI_CTRL_PORT" | grep -q .; }
FI=(fi_pingpong -p verbs -e msg -I 10 -S 4096)
tool_pair fabric ctrl_listens -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 "${FI[@]}" -d "$SERVER_DEV" -- \
	"${OVER_CEPM[@]}" timeout 120 "${FI[@]}" -d "$RXE_DEV" $ADDR
ktap_check "fi_pingpong -> fi_pingpong: both exit 0 ($crc, $src)" sh -c "test $crc = 0 && test $src = 0"
# Its table: size, sent, acknowledged ("=10"), ...
acked() { awk '$1 == "4k" && $2 == 10 && $3 == "=10" { ok = 1 } END { exit !ok }' "$out.fabric-$1"; }
both_acked() { acked c && acked s; }
ktap_check "... 10 messages of 4 KiB each way, acknowledged on both ends" both_acked

# rdma_xserver and rdma_xclient in RC mode: one message from client to server. rxe can lose
# its ACK (lib.sh, rxe_lost_ack_mark): the end left hanging is stopped 20 s after the other.
rxe_lost_ack_mark "$RXE_DEV" "$SERVER_DEV"
linger=20 tool_pair xrc-r "cepm_listens 7190" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rdma_xserver -c r -p 7190 -- \
	"${OVER_CEPM[@]}" timeout 120 rdma_xclient -c r -s $ADDR -p 7190
rc_mode_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ] && file_has '^rdma_xserver: end 0' "$out.xrc-r-s" && file_has '^rdma_xclient: end 0' "$out.xrc-r-c"; }
check_unless_lost_ack "rdma_xclient -c r -> rdma_xserver -c r: both end 0 ($crc, $src)" \
	xrc-r '^rdma_xclient: end 0' '^rdma_xserver: end 0' rc_mode_ok

# XRC mode: refused before any connection, in rdma_create_ep, as the stock stack refuses it.
"${OVER_CEPM[@]}" timeout 60 rdma_xclient -c x -s $ADDR -p 7191 >"$out.xrc-x" 2>&1
xrc_rc=$?
show_file "# rdma_xclient -c x: " "$out.xrc-x"
xrc_refused() { [ "$xrc_rc" != 0 ] && file_has '^rdma_create_ep: Operation not supported' "$out.xrc-x"; }
ktap_check "rdma_xclient -c x: rdma_create_ep fails with EOPNOTSUPP, as on the stock stack (exit $xrc_rc)" xrc_refused

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every tool has exited" wait_until 60 ceps_are 0
ktap_finished
