#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stale connections: a new REQ from a QP that is already connected gets REJ 10 (Stale
# Connection), and the old connection is disconnected (DREQ), as Linux does
# (cm_match_req in drivers/infiniband/core/cm.c).  Both connections are CM-only from this host
# and announce the same QPN (--qpn: each cepmctl process otherwise has its own).  Loopback, or
# with the passive side in another namespace.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

SID=0x0000000001064e70 QPN=0x00c0de
out=$CEPM_ROOT/out/cep_stale.$$
trap 'topology_down; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$out.accept"; }
held() { file_has 'RTU sent; CEP [0-9]* in ESTABLISHED' "$out.first"; }

ktap_check "topology $TOPOLOGY is up" topology_up
# The passive side holds its connection, answers nothing else, and stops at the next event.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --cm-only --hold --timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --service-id $SID --cm-only --qpn $QPN --hold --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.first" 2>&1 &
fpid=$!
wait_until 20 held
# Same QPN, same CA, a new connection: stale.
rej0=$("$CEPMCTL" tx-count "$SERVER_DEV" 1 REJ)
"$CEPMCTL" connect --service-id $SID --cm-only --qpn $QPN --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.second" 2>&1
src=$?
wait $fpid
frc=$?
kill $apid 2>/dev/null
wait $apid 2>/dev/null
show_files "$out.first" "$out.second"
ktap_check "the new connection is rejected with REJ 10 (Stale Connection)" \
	sh -c "test $src != 0 && grep -q 'got REJ_RECEIVED (status 10)' '$out.second'"
ktap_check "the old connection's peer disconnects it (DREQ)" \
	sh -c "test $frc = 0 && grep -q 'event DREQ_RECEIVED' '$out.first'"
ktap_check "exactly one REJ went out (the stateless REJ 10)" \
	test "$("$CEPMCTL" tx-count "$SERVER_DEV" 1 REJ)" = $((rej0 + 1))
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
