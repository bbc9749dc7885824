#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# CM MADs sent at a managed port reach cepm's agent and are counted per attribute ID.
# They are injected by a send-only ib_umad agent to the port's own RoCE v2 GID: rxe loops them
# back, and the MAD layer delivers them to the owner of class 0x07 exactly as a peer's MADs.
# A MAD cut short, which the MAD layer never sends, comes as a raw RoCE v2 frame written to
# veth1 (cepmctl send-frame) from 10.77.0.9, a host that is not there: only its first 164
# bytes reach QP1. cepm drops it as malformed, where the receive buffer's size would have
# made it a whole REQ; the same REQ sent whole the same way is a REQ.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 10

req0=$(rx REQ) dreq0=$(rx DREQ) rtu0=$(rx RTU)

"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ
ktap_check "one REQ sent, REQ counter +1" wait_until 10 counter_is rx REQ $((req0 + 1))

"$CEPMCTL" send-mad "$RXE_DEV" 1 DREQ --count 3
ktap_check "three DREQs sent, DREQ counter +3" wait_until 10 counter_is rx DREQ $((dreq0 + 3))
ktap_check "REQ counter unchanged by DREQs" counter_is rx REQ $((req0 + 1))
ktap_check "RTU counter unchanged" counter_is rx RTU "$rtu0"

out=$CEPM_ROOT/out/mad_counted.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; ip neigh del 10.77.0.9 dev veth0 2>/dev/null
	ip neigh del 10.77.0.1 dev veth1 2>/dev/null; rm -f "$out".*' EXIT
read -r mac0 </sys/class/net/veth0/address
read -r mac1 </sys/class/net/veth1/address
# The frames' way in, and the way out of the listener's REJ to the absent 10.77.0.9.
ip neigh replace 10.77.0.1 lladdr "$mac0" dev veth1 nud permanent
ip neigh replace 10.77.0.9 lladdr "$mac1" dev veth0 nud permanent
sid=0x0000000001064e7e
"$CEPMCTL" serve --service-id $sid --reason 28 --timeout-ms 20000 >"$out.serve" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve"
# send_req_frame BYTES: the first BYTES bytes of a REQ for $sid, from 10.77.0.9 to rxe0.
send_req_frame() {
	"$CEPMCTL" send-frame veth1 REQ --to 10.77.0.1 --from 10.77.0.9 --cut-at "$1" \
		--service-id $sid
}
req1=$(rx REQ) malformed1=$(rx malformed) invalid1=$(rx invalid)
send_req_frame 164
mad_barrier
ktap_check "a REQ cut at 164 bytes counts as malformed" \
	wait_until 10 counter_is rx malformed $((malformed1 + 1))
ktap_check "... and not as a REQ" counter_is rx REQ "$req1"
ktap_check "... nor as a whole MAD that is not a valid CM message" counter_is rx invalid "$invalid1"
heard_nothing() { ! file_has REQ_RECEIVED "$out.serve"; }
ktap_check "... and the listener hears nothing of it" heard_nothing
send_req_frame 256
ktap_check "the same REQ sent whole the same way counts as a REQ" \
	wait_until 10 counter_is rx REQ $((req1 + 1))
served() { wait $spid && file_has '^serve: REQ from comm ID' "$out.serve"; }
ktap_check "... and reaches the listener" served
show_files "$out.serve"
ktap_finished
