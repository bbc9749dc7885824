#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# cepm's CM against the stock Linux CM, at the CM level: cepmctl speaks rdma_cm's dialect
# (--rdma-cm: IP service IDs, a cma_hdr in the REQ, real RoCE v2 GIDs) to stock rdma-core tools
# and checks what comes back: REJ 8 without a listener, REJ 28 for a cma_hdr of another
# version, a stock rdma_reject's reason and private data, and a peer that vanishes
# mid-connect. cepm manages rxe0 alone (cepm.devices=rxe0); the stock ib_cm/rdma_cm owns
# rxe1, on veth1 in namespace cepm_peer (10.77.0.2), where the rdma-core tools run. The tools
# themselves over cepm against the stock stack are in rdmacm_stock.sh and interop_rping.sh.
. "$(dirname "$0")/lib.sh"
interop_begin ucmatose
ktap_set_plan 6

out=$CEPM_ROOT/out/interop_stock.$$

ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

# 1. Failures against the stock CM: no listener (REJ 8); a bad cma_hdr version (REJ 28).
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7999)" "${TO_STOCK[@]}" --cm-only >"$out.rej8" 2>&1
rc=$?
show_files "$out.rej8"
ktap_check "no stock listener: REJ 8 reaches the cepmctl user" \
	sh -c "test $rc != 0 && grep -q 'got REJ_RECEIVED (status 8)' '$out.rej8'"
"${PEER[@]}" timeout 60 ucmatose -b 10.77.0.2 -p 7475 -c 1 >"$out.ucm3" 2>&1 &
spid=$!
wait_until 10 stock_listens 7475
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7475)" "${TO_STOCK[@]}" --cm-only --cma-version 1 >"$out.rej28" 2>&1
rc=$?
kill $spid 2>/dev/null
wait $spid
show_files "$out.rej28"
ktap_check "a cma_hdr of version 1: the stock listener answers REJ 28" \
	sh -c "test $rc != 0 && grep -q 'got REJ_RECEIVED (status 28)' '$out.rej28'"

# 2. A stock server that rejects with private data of its own (rdma_reject(3)).
"${PEER[@]}" timeout 60 "$CEPM_ROOT/out/selftests/rdma_reject_server" 10.77.0.2 7479 "not today" >"$out.rj" 2>&1 &
spid=$!
wait_until 10 file_has '^listening' "$out.rj"
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7479)" "${TO_STOCK[@]}" --cm-only >"$out.rjc" 2>&1
rc=$?
wait $spid
src=$?
sed 's/^/# /' "$out.rj" "$out.rjc" | cut -c1-200
ktap_check "a stock server's rdma_reject: the cepm user gets reason 28 and its private data" \
	sh -c "test $rc != 0 && test $src = 0 && grep -q 'got REJ_RECEIVED (status 28), [0-9]* bytes of private data \"not today' '$out.rjc'"

# 3. The peer host goes away mid-connect: the REQ is lost (netem drops everything on veth0),
#    then the host's rxe1 and address vanish; the REQ runs out of retries and nothing is left.
#    The namespace itself goes only after that: moving veth1 out takes veth0's carrier away,
#    and a retry sent in that moment would fail in rxe's transmit path, which then moves
#    rxe0's QP1 to the error state for good (see docs/interop.md).
modprobe sch_netem
tc qdisc add dev veth0 root netem loss 100%
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7477)" "${TO_STOCK[@]}" --cm-only --max-cm-retries 3 \
	--cm-response-timeout 17 --packet-life-time 8 >"$out.gone" 2>&1 &
cpid=$!
wait_until 10 file_has '^connect: REQ sent' "$out.gone"
"${PEER[@]}" rdma link delete rxe1
ip -n $PEER_NS addr flush dev veth1
wait $cpid
rc=$?
peer_ns_down
tc qdisc del dev veth0 root
show_files "$out.gone"
ktap_check "peer gone mid-connect: REQ_ERROR (ETIMEDOUT) reaches the user" \
	sh -c "test $rc != 0 && grep -q 'got REQ_ERROR (status 110)' '$out.gone'"
ktap_check "no CEP is left in the module" wait_until 20 ceps_are 0
ktap_finished
