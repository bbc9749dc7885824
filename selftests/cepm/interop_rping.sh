#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# cepm against rdma-core's rping, both ways, with the stock Linux CM on the other host (see
# interop_stock.sh for the topology): rping itself, unmodified, runs over cepm's librdmacm
# (out/rdmacm) on this host and over the stock stack on the other. rping's server RDMA-reads
# the client's buffer and RDMA-writes it back; the client checks the echo (-V). The first
# connection is captured on veth0 and must decode cleanly in tshark's InfiniBand dissector;
# the capture is kept as out/artefacts/interop-rping.pcap.
. "$(dirname "$0")/lib.sh"
interop_begin rping tshark dumpcap
need_library
ktap_set_plan 7

out=$CEPM_ROOT/out/interop_rping.$$
pcap=$CEPM_ROOT/out/artefacts/interop-rping.pcap
pings_verified() { [ "$(grep -c '^ping data: rdma-ping-' "$1")" = 10 ]; }

ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

# 1. rping -c over cepm -> stock rping -s, captured.
mkdir -p "$(dirname "$pcap")"
rm -f "$pcap"
dumpcap -i veth0 -f "udp port 4791" -w "$out.pcap" >"$out.dumpcap" 2>&1 &
tpid=$!
wait_until 30 file_has "Capturing on" "$out.dumpcap"
show_lines=12 tool_pair rping-to "stock_listens 7174" -- \
	"${PEER[@]}" timeout 60 rping -s -a 10.77.0.2 -p 7174 -v -S 64 -- \
	"${OVER_CEPM[@]}" timeout 60 rping -c -a 10.77.0.2 -I 10.77.0.1 -p 7174 -C 10 -S 64 -v -V
# The DREP is the last CM message: once dumpcap has written it, the capture is whole.
wait_until 10 capture_has_mads "$out.pcap" 0016 1
kill -INT $tpid
wait $tpid
cp "$out.pcap" "$pcap"
ktap_check "rping -c over cepm -> stock rping -s: both ends succeed" sh -c "test $crc = 0 && test $src = 0"
ktap_check "... 10 pings echoed by the server's RDMA read and write, verified" pings_verified "$out.rping-to-c"

# The capture, dissected once (tshark starts slowly under TCG): the CM attribute and the worst
# expert-info severity of each frame.  Malformed frames carry an Error (0x800000) expert info.
tshark -r "$pcap" -T fields -e infiniband.mad.attributeid -e _ws.expert.severity >"$out.frames" 2>"$out.tshark-err"
trc=$?
awk -F'\t' '$1 != "" { print "# CM attribute in capture: " $1 }' "$out.frames"
ktap_check "tshark dissected the capture: REQ, REP, RTU, DREQ and DREP are there" \
	sh -c "test $trc = 0 && for a in 0x0010 0x0013 0x0014 0x0015 0x0016; do cut -f1 '$out.frames' | grep -qx \$a || exit 1; done"
# tshark prints severities in decimal, comma-separated; Warning is 0x600000 (6291456).
worst_severity() { cut -f2 "$out.frames" | tr ',' '\n' | awk 'NF && $1 + 0 > m { m = $1 + 0 } END { print m + 0 }'; }
ktap_check "tshark's InfiniBand dissector finds nothing malformed (no expert info of Warning or worse)" \
	test "$(worst_severity)" -lt 6291456

# 2. stock rping -c -> rping -s over cepm: it RDMA-reads and writes back; rping -V verifies.
tool_pair rping-from "cepm_listens 7175" -- \
	"${OVER_CEPM[@]}" timeout 60 rping -s -a 10.77.0.1 -p 7175 -S 64 -v -- \
	"${PEER[@]}" timeout 60 rping -c -a 10.77.0.1 -I 10.77.0.2 -p 7175 -C 10 -S 64 -v -V
ktap_check "stock rping -c -V -> rping -s over cepm: both ends succeed" sh -c "test $crc = 0 && test $src = 0"
ktap_check "... 10 pings served (RDMA read and write) and verified" pings_verified "$out.rping-from-c"
ktap_finished
