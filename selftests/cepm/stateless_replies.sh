#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Messages that match no connection get Linux's stateless answers, sent through the MAD layer:
# a REQ for a service nobody listens on gets REJ reason 8 (Invalid Service ID), a DREQ for
# unknown comm IDs gets a DREP.  The peer here is the port itself (ib_umad loopback), so the
# answers come back to cepm and show up in its receive counters too.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

rej_tx0=$(tx REJ) rej_rx0=$(rx REJ) drep_tx0=$(tx DREP) drep_rx0=$(rx DREP)

"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid
ktap_check "REQ with no listener: one REJ sent" wait_until 10 counter_is tx REJ $((rej_tx0 + 1))
ktap_check "the REJ arrives back over the wire" wait_until 10 counter_is rx REJ $((rej_rx0 + 1))

"$CEPMCTL" send-mad "$RXE_DEV" 1 DREQ --valid --count 2
ktap_check "DREQ for unknown comm IDs: two DREPs sent" wait_until 10 counter_is tx DREP $((drep_tx0 + 2))
ktap_check "the DREPs arrive back" wait_until 10 counter_is rx DREP $((drep_rx0 + 2))

# A zero body is a REQ with QPN 0: the protocol core refuses it (counted as invalid), and it is
# answered with one REJ, reason 9 (Core v2 defect 3; cep_req_validation.sh checks the reason),
# not dropped, so that the peer stops retrying it.
"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ
ktap_check "a REQ with QPN 0 is counted as invalid" \
	wait_until 10 sh -c "'$CEPMCTL' ports | grep -q 'invalid: [1-9]'"
ktap_check "... and answered with exactly one more REJ" wait_until 10 counter_is tx REJ $((rej_tx0 + 2))
ktap_finished
