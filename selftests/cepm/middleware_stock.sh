#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The middleware of middleware.sh, unmodified, over cepm's librdmacm on one end and over the
# stock stack (rdma-core's librdmacm, the kernel's rdma_cm and ib_cm) on the other, in both
# directions: UCX's ucp_client_server (tag mode, UCX's rdmacm CM over rc_verbs) and
# libfabric's fi_pingpong (verbs, MSG endpoints). cepm manages rxe0 alone (10.77.0.1, this
# namespace); the stock CM owns rxe1 (10.77.0.2, namespace cepm_peer), as in rdmacm_stock.sh.
# Afterwards no CEP is left.
. "$(dirname "$0")/lib.sh"
interop_begin fi_pingpong
need_library
need_progs ucp_client_server
UCP=$progs/ucp_client_server
ktap_set_plan 6

out=$CEPM_ROOT/out/middleware_stock.$$
OURS=10.77.0.1 STOCK=10.77.0.2
ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

# UCX, one message; its server serves until stopped, its output line-buffered to survive that.
export UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_TLS=rc_verbs
UCX_PORT=13338
ucx_ok() { [ "$crc" = 0 ] && file_has '^UCX data message was received' "$out.$1-s" && file_has 'UCP TEST SUCCESS' "$out.$1-s"; }
stop_server=1 again_if_ucx_aborted ucx-to ucx_ok tool_pair ucx-to "stock_listens $UCX_PORT" -- \
	"${PEER[@]}" env UCX_NET_DEVICES=rxe1:1 timeout 120 stdbuf -oL "$UCP" -l $STOCK -p $UCX_PORT -c tag -- \
	"${OVER_CEPM[@]}" UCX_NET_DEVICES=rxe0:1 timeout 120 "$UCP" -a $STOCK -p $UCX_PORT -c tag
ktap_check "UCX client over cepm -> stock UCX server: the client exits 0, the server received its message ($crc)" ucx_ok ucx-to
stop_server=1 again_if_ucx_aborted ucx-from ucx_ok tool_pair ucx-from "cepm_listens $UCX_PORT" -- \
	"${OVER_CEPM[@]}" UCX_NET_DEVICES=rxe0:1 timeout 120 stdbuf -oL "$UCP" -l $OURS -p $UCX_PORT -c tag -- \
	"${PEER[@]}" env UCX_NET_DEVICES=rxe1:1 timeout 120 "$UCP" -a $OURS -p $UCX_PORT -c tag
ktap_check "stock UCX client -> UCX server over cepm: the client exits 0, the server received its message ($crc)" ucx_ok ucx-from

# fi_pingpong, 10 messages of 4 KiB each way; its server listens on its TCP control port first.
FI=(fi_pingpong -p verbs -e msg -I 10 -S 4096)
FI_CTRL_PORT=47592
peer_ctrl_listens() { "${PEER[@]}" ss -Hltn "sport = :$FI_CTRL_PORT" | grep -q .; }
ctrl_listens() { ss -Hltn "sport = :$FI_CTRL_PORT" | grep -q .; }
acked() { awk '$1 == "4k" && $2 == 10 && $3 == "=10" { ok = 1 } END { exit !ok }' "$out.$1"; }
fabric_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ] && acked "$1-c" && acked "$1-s"; }
tool_pair fabric-to peer_ctrl_listens -- \
	"${PEER[@]}" timeout 120 "${FI[@]}" -d rxe1 -- \
	"${OVER_CEPM[@]}" timeout 120 "${FI[@]}" -d rxe0 $STOCK
ktap_check "fi_pingpong over cepm -> stock fi_pingpong: both exit 0, 10 messages acknowledged ($crc, $src)" fabric_ok fabric-to
tool_pair fabric-from ctrl_listens -- \
	"${OVER_CEPM[@]}" timeout 120 "${FI[@]}" -d rxe0 -- \
	"${PEER[@]}" timeout 120 "${FI[@]}" -d rxe1 $OURS
ktap_check "stock fi_pingpong -> fi_pingpong over cepm: both exit 0, 10 messages acknowledged ($crc, $src)" fabric_ok fabric-from

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every tool has exited" wait_until 60 ceps_are 0
ktap_finished
