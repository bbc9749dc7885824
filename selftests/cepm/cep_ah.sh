#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A CEP holds an address handle only while a MAD to its peer is outstanding, as Linux's CM
# does (cm_alloc_msg makes the AH for the send, cm_free_msg destroys it): a device's AHs are
# few (rxe: 32,767), and CEPs that kept theirs for life let one user's idle connections use
# up every other user's.
# The oracle is the users count of the protection domain the MAD layer sends from (rdma res
# show pd; each AH holds a reference to its PD).  Loopback on rxe0:
#  1. a connection both ends hold, established (its RTU sent), holds no AH at either end;
#  2. neither do the CEPs a server rejected and keeps (IDLE, its REJ sent).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

SID=0x0000000001064ea0
out=$CEPM_ROOT/out/cep_ah.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT

# The users of the PD ib_core's MAD layer made on $RXE_DEV (its GSI QP's).
mad_pd_users() {
	rdma res show pd dev "$RXE_DEV" | awk '/comm \[ib_core\]/ { for (i = 1; i < NF; i++) if ($i == "users") print $(i + 1) }'
}
pd_users_are() { [ "$(mad_pd_users)" = "$1" ]; }
rdma res show pd dev "$RXE_DEV"
base=$(mad_pd_users)
ktap_check "the MAD layer's PD on $RXE_DEV is found: $base user(s)" test -n "$base"

# 1. A CM-only connection both ends hold until their next event.
hold_pair $SID "$out"
ktap_check "a connection is established at both ends" test "$(established_ceps)" = 2
wait_until 10 pd_users_are "$base"
rdma res show pd dev "$RXE_DEV"
ktap_check "... and holds no address handle ($(mad_pd_users) PD users, $base before)" pd_users_are "$base"

# 2. A server rejects 4 REQs and keeps their CEPs (it would stop after a fifth).
"$CEPMCTL" serve --service-id $((SID + 1)) --count 5 --keep-rejected --timeout-ms 30000 >"$out.serve" 2>&1 &
wait_until 10 file_has '^serve: listening' "$out.serve"
for i in 1 2 3 4; do
	"$CEPMCTL" connect --service-id $((SID + 1)) --cm-only --timeout-ms 20000 >"$out.c$i" 2>&1
done
kept() { [ "$(grep -c 'keeping CEP [0-9]* in IDLE' "$out.serve")" = 4 ]; }
wait_until 10 kept
show_files "$out.serve"
ktap_check "4 REQs are rejected and their CEPs kept in IDLE" kept
wait_until 10 pd_users_are "$base"
ktap_check "... and hold no address handle ($(mad_pd_users) PD users, $base before)" pd_users_are "$base"
ktap_finished
