#!/usr/bin/env bash
# The listener table under colliding service IDs, inside the VM (scripts/bench-listen.sh boots
# it). CM-only connections to one service ID, S, are set up and torn down over rxe0
# (`cepmctl connect --count N --phases`), first with S the only listen, then with 1024 more
# listens placed where a hash that folds a service ID's bits (ID ^ ID >> 8, modulo 16, for
# an ID below 0x10000) puts S: the listens a user could make to slow every REQ for S against
# such a hash. S listens last, so that a table that scans its shard in order scans them all.
# The module's table hashes under a random key and keeps a shard's listeners in a tree, so
# the two should cost the same; CEPM_KO (scripts/vm) runs the same on another cepm.ko.
# Usage: scripts/bench-listen-guest.sh [N]   (default: 2000 connections, 16 in flight)
set -uo pipefail
cd "$CEPM_ROOT/selftests/cepm"
. ./lib.sh
n=${1:-2000}
rounds=${CEPM_BENCH_ROUNDS:-3}
out=$CEPM_ROOT/out/bench-listen
mkdir -p "$out"
report=$CEPM_ROOT/out/bench-listen.md
S=0x4000
fail=0

# 1024 IDs whose bits 0 to 3 equal their bits 8 to 11, as S's do, S left out.
ids=
for hi in 0 1 2 3; do
	for a in {0..15}; do
		for b in {0..15}; do ids+=$(printf '0x%x,' $((hi << 12 | a << 8 | b << 4 | a))); done
	done
done
ids=${ids%,}

rmmod cepm 2>/dev/null
insmod "$CEPM_KO" max_listens_per_file=2048 max_listens_per_user=4096 || exit 1
wait_until 20 port_listed rxe0 1 || exit 1

# run NAME: one round of N connections to S; the client's phases in $out/NAME.
run() {
	"$CEPMCTL" accept --service-id $S --cm-only --count "$n" >"$out/$1-server" 2>&1 &
	local spid=$!
	wait_until 30 list_has_state LISTEN $S
	"$CEPMCTL" connect --service-id $S --cm-only --count "$n" --phases --parallel 16 \
		--timeout-ms 60000 >"$out/$1" 2>&1 || fail=1
	wait $spid || fail=1
	sed 's/^/  /' "$out/$1"
}
# connect_ms FILE: the connect phase's length, in ms.
connect_ms() { sed -n 's/^connect phase: .*in flight, \([0-9.]*\) ms,.*/\1/p' "$1"; }
p50_ms() { sed -n 's/.*setup p50 \([0-9.]*\) ms.*/\1/p' "$1"; }

for r in $(seq "$rounds"); do
	echo "== round $r: S alone"
	run alone.$r
	echo "== round $r: S after 1024 listens in its folded shard"
	"$CEPMCTL" hold-listens --service-ids "$ids" --hold-ms 600000 >"$out/hold.$r" 2>&1 &
	hpid=$!
	wait_until 60 file_has '^holding 1024 listens' "$out/hold.$r" || fail=1
	run crowded.$r
	kill $hpid
	wait $hpid 2>/dev/null
done

median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
row() {
	local c=() p=() f
	for f in "$out/$1".*; do c+=($(connect_ms "$f")) p+=($(p50_ms "$f")); done
	echo "| $2 | $n | $(median "${c[@]}") | ${c[*]} | $(median "${p[@]}") |"
}
{
	echo "| listens | connections | connect phase, median (ms) | each round (ms) | setup p50, median (ms) |"
	echo "|---|---|---|---|---|"
	row alone "S alone"
	row crowded "S and 1024 in its folded shard"
} | tee "$report"
exit $fail
