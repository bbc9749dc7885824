#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# CM MADs sent at a managed port reach cepm's agent and are counted per attribute ID.
# They are injected by a send-only ib_umad agent to the port's own RoCE v2 GID: rxe loops them
# back, and the MAD layer delivers them to the owner of class 0x07 exactly as a peer's MADs.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 4

req0=$(rx REQ) dreq0=$(rx DREQ) rtu0=$(rx RTU)

"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ
ktap_check "one REQ sent, REQ counter +1" wait_until 10 counter_is rx REQ $((req0 + 1))

"$CEPMCTL" send-mad "$RXE_DEV" 1 DREQ --count 3
ktap_check "three DREQs sent, DREQ counter +3" wait_until 10 counter_is rx DREQ $((dreq0 + 3))
ktap_check "REQ counter unchanged by DREQs" counter_is rx REQ $((req0 + 1))
ktap_check "RTU counter unchanged" counter_is rx RTU "$rtu0"
ktap_finished
