#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A hostile peer: cepmctl fuzz-mad on rxe1, in the peer namespace, sends rxe0's cepm a
# seeded stream of CM MADs through ib_umad (well-formed messages of every kind with random
# fields, flipped bytes, broken headers, short bodies, unknown attributes, duplicates,
# reordering), aimed in part at the comm IDs and QPNs of a live connection it harvested, and
# at both hosts' GIDs. Next to it, legitimate connections from rxe0 to a server on rxe1, whose
# IDs it does not know, in rounds of 100 through the whole run, must all succeed; when
# everything is closed no CEP may be left, and a new connection must work.
# dmesg_clean.sh judges the kernel log and kmemleak at the end of the run. Fixed seed, so a
# failure replays; CEPM_MAD_FUZZ_SEED and CEPM_MAD_FUZZ_COUNT override.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology (the peer sends from rxe1)"; exit "$KSFT_SKIP"; }
ktap_set_plan 8

seed=${CEPM_MAD_FUZZ_SEED:-1}
count=${CEPM_MAD_FUZZ_COUNT:-5000}
SID_SINK=0x0000000001064e90 SID_HELD=0x0000000001064e91 SID_LEGIT=0x0000000001064e92
SID_AFTER=0x0000000001064e93 SID_SIDR=0x0000000001114e94
out=$CEPM_ROOT/out/mad_fuzz.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up

# Targets: a listener on rxe0 that rejects whatever it is offered, and a held connection
# from rxe0 to rxe1 whose comm IDs the fuzzer is given.
# The targets outlast the whole run: 10 minutes, plus 20 ms a MAD (room for 50 a second; the
# fuzzer sends about 400 a second under KASAN).
long_ms=$(((600 + count / 50) * 1000))
"$CEPMCTL" serve --service-id $SID_SINK --count 1000000 --timeout-ms $long_ms >"$out.sink" 2>&1 &
sink_pid=$!
wait_until 10 file_has '^serve: listening' "$out.sink"
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID_HELD --cm-only --hold --timeout-ms $long_ms \
	>"$out.held-accept" 2>&1 &
wait_until 10 file_has '^accept: listening' "$out.held-accept"
"$CEPMCTL" connect --service-id $SID_HELD --cm-only --hold --timeout-ms $long_ms "${TO_SERVER[@]}" >"$out.held" 2>&1 &
held_up() { file_has 'in ESTABLISHED' "$out.held"; }
ktap_check "a held connection to aim at is established" wait_until 20 held_up
# Harvested: the held connection's comm IDs (ours and the peer's), as cepmctl list shows them.
ids=$("$CEPMCTL" list | awk '$2 == "ESTABLISHED" { print $1; print $4 }' | sort -u | paste -sd, -)
qpns=$("$CEPMCTL" list | awk '$2 == "ESTABLISHED" { print $5 }' | sort -u | paste -sd, -)
# And the GIDs of both hosts, which REQ paths and REJ ARIs name.
gids=::ffff:10.77.0.1,::ffff:10.77.0.2
ktap_print_msg "harvested comm IDs: $ids; QPNs: $qpns; GIDs: $gids"

# Legitimate connections next to it, to a service and with comm IDs the fuzzer does not know:
# rounds of 100, one as it starts and one each time it reports another 100,000 MADs, so that a
# long run (10^6 under KASAN) has them all along.  A round appends "ok" or "failed" to
# $out.rounds, and keeps the tails of a failed round's output.
legit_round() {
	local apid crc arc
	rm -f "$out.legit-accept"
	"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --cm-only --service-id $SID_LEGIT --count 100 \
		--timeout-ms 60000 </dev/null >"$out.legit-accept" 2>&1 &
	apid=$!
	wait_until 30 file_has '^accept: listening' "$out.legit-accept"
	"$CEPMCTL" connect --cm-only --service-id $SID_LEGIT --count 100 --parallel 8 --timeout-ms 60000 \
		"${TO_SERVER[@]}" </dev/null >"$out.legit" 2>&1
	crc=$?
	wait $apid
	arc=$?
	if [ $crc = 0 ] && [ $arc = 0 ] && grep -q '^connect: 100 connected and disconnected, 0 failed' "$out.legit"; then
		echo ok >>"$out.rounds"
	else
		echo failed >>"$out.rounds"
		tail -n 3 "$out.legit" "$out.legit-accept" >>"$out.failed-rounds"
	fi
}
on_server "$CEPMCTL" fuzz-mad "$SERVER_DEV" 1 --to-gid ::ffff:10.77.0.1 --seed "$seed" --count "$count" \
	--comm-ids "$ids" --qpns "$qpns" --gids "$gids" --service-ids "$SID_SINK,$SID_HELD,$SID_SIDR,0x0000000001064eff" 2>&1 |
	tee "$out.fuzz" | {
	legit_round
	while read -r line; do
		case $line in *' MADs so far '*) legit_round ;; esac
	done
}
frc=${PIPESTATUS[0]}
show_files "$out.fuzz"
# The sink must still be listening, or the fuzzer's REQs for SID_SINK met no listener and the
# run never exercised a live one.
sink_alive() { ! exited "$sink_pid"; }
sink_alive || show_file '# ' "$out.sink" 3
ktap_check "the sink listener outlived the fuzzer" sink_alive
ktap_print_msg "the sink answered $(grep -c '^serve: rejected' "$out.sink") REQs and $(grep -c '^serve: answered the SIDR_REQ' "$out.sink") SIDR_REQs"
ktap_check "the fuzzer sent its $count MADs (seed $seed)" sh -c "test $frc = 0 && grep -q '^fuzz-mad: seed .* MADs sent in' '$out.fuzz'"
rounds=$(grep -c . "$out.rounds" 2>/dev/null)
[ ! -s "$out.failed-rounds" ] || show_files "$out.failed-rounds"
# A round at the start and one for each progress line, which comes for every multiple of
# 100,000 below the count: a run whose rounds stopped coming would show here.
reports=$(grep -c ' MADs so far ' "$out.fuzz")
ktap_check "$((${rounds:-0} * 100)) legitimate connections next to it (rounds of 100: ${rounds:-0}, for $reports progress reports): all connected and disconnected" \
	sh -c "test '${rounds:-0}' = $((reports + 1)) && test $reports = $(((count - 1) / 100000)) && ! grep -q failed '$out.rounds'"

# Everything closed: no CEP may be left (the held connection may still be in timewait).
kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every process has gone" wait_until 60 ceps_are 0
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --cm-only --service-id $SID_AFTER --timeout-ms 30000 \
	>"$out.after-accept" 2>&1 &
wait_until 10 file_has '^accept: listening' "$out.after-accept"
connect_after() {
	"$CEPMCTL" connect --cm-only --service-id $SID_AFTER --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.after" 2>&1
}
ktap_check "and a new connection works" connect_after
ktap_check "rxe0's CM port still lists its counters" port_listed "$RXE_DEV" 1
ktap_finished
