#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Connection storms: `cepmctl storm`, CM only, a server (on the server's host, see
# topology_up) and several clients, every connection with a seeded fate (complete; destroyed
# right after CONNECT, racing the REP on its way; after REP_RECEIVED without RTU; after the
# RTU without disconnect; left to the file's close at exit) and every REQ too (accept; reject;
# destroy after the claim or after the REP; left unclaimed a while). In rounds:
#  a. CEPM_STORM_ITERATIONS connections over four clients: two of them, and the server, are
#     killed with kill -9 at a seeded moment mid-storm and replaced;
#  b. rmmod cepm, three times in the middle of a storm: refused (files open), cepm stays
#     loaded and the storm goes on;
#  c. rdma link delete of the clients' device in the middle of a storm: every client hears it
#     and exits; the device is added back and managed again;
#  d. every storm process has exited, no CEP is left, and a fresh connection works.
# A storm process that meets an errno docs/abi.md does not allow, an event for a destroyed
# CEP or one the protocol forbids, or a stall exits 1 (a failed check here). dmesg_clean.sh
# judges the kernel log and kmemleak at the end of the run.
# CEPM_STORM_ITERATIONS (default 600; check-kasan 10^4, stress 10^6) and CEPM_STORM_SEED
# (default 1) override; the seed fixes every choice of the storms and of this script.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 16

iterations=${CEPM_STORM_ITERATIONS:-600}
seed=${CEPM_STORM_SEED:-1}
RANDOM=$seed
clients=4
share=$(((iterations + clients - 1) / clients))
progress=$((share / 20 > 10 ? share / 20 : 10))
# Seconds any one wait for a storm may take: generous, scaled like the runner's limits.
bound=$(((60 + iterations / 20) * ${CEPM_LIMIT_SCALE:-1}))
# A client that only a signal, kill -9 or device removal ends.
ENDLESS=1000000000
SID_A=0x0000000001064eb0 SID_B=0x0000000001064eb1 SID_C=0x0000000001064eb2 SID_AFTER=0x0000000001064eb3
out=$CEPM_ROOT/out/storms.$$
all_pids=()

cleanup() {
	kill -KILL $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	cepm_loaded || insmod "$CEPM_KO"
	rdma link show "$RXE_DEV/1" >/dev/null 2>&1 || rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"
	wait_until 20 port_listed "$RXE_DEV" 1
	topology_down
	rm -f "$out".*
}
trap cleanup EXIT

# start_server NAME SERVICE_ID SEED: a storm server on the server's host, listening; its pid
# in $pid (ip netns exec execs it, so the pid is cepmctl's own).
start_server() {
	"${SERVER[@]}" "$CEPMCTL" storm --role server --service-id "$2" --seed "$3" \
		--timeout-ms $((bound * 1000)) >"$out.$1" 2>&1 &
	pid=$!
	all_pids+=("$pid")
	wait_until 10 file_has '^storm: server listening' "$out.$1"
}
# start_client NAME SERVICE_ID SEED ITERATIONS: a storm client to the server; pid in $pid.
# It fails as stalled when its connections hear nothing for 90 s: longer than a REQ left
# unclaimed may legitimately wait (the backlog's MRA gives it about 67 s).
start_client() {
	"$CEPMCTL" storm --role client --device "$RXE_DEV" --service-id "$2" --seed "$3" --iterations "$4" \
		--progress "$progress" --timeout-ms 90000 "${TO_SERVER[@]}" >"$out.$1" 2>&1 &
	pid=$!
	all_pids+=("$pid")
}
# progress_reached NAME N: the client NAME has started at least N connections.
progress_reached() {
	awk -v n="$2" '$1 == "storm:" && $2 == "progress" && $3 >= n { f = 1 } END { exit !f }' "$out.$1" 2>/dev/null
}
# finish PID...: waits (bounded) until every PID has exited; their exit statuses in $rcs.
finish() {
	local p
	rcs=()
	wait_until "$bound" exited "$@"
	for p; do
		if exited "$p"; then wait "$p"; rcs+=("$?"); else rcs+=(timeout); fi
	done
}
# all_are VALUE WORDS...: every word is VALUE.
all_are() {
	local v=$1 w
	shift
	for w; do [ "$w" = "$v" ] || return 1; done
}
# A threshold from the script's seed in [LO, HI], rounded up to a progress step.
pick() { local t=$(($1 + RANDOM % ($2 - $1 + 1))); echo $(((t + progress - 1) / progress * progress)); }
# show NAME...: each storm's summary lines (or its last words), as KTAP comments.
show() {
	local n
	for n; do
		echo "$n:"
		grep -E '^(storm: [0-9]+ iterations|storm: server:|storm: (client|server) (details|tolerated)|storm: client stopped|cepmctl:)' "$out.$n" ||
			tail -n 5 "$out.$n"
	done | sed 's/^/# /'
}
# summary_iterations NAME, summary_completed NAME: from the client's summary (0 without one).
summary_iterations() { local v; v=$(sed -n 's/^storm: \([0-9]*\) iterations,.*/\1/p' "$out.$1"); echo "${v:-0}"; }
summary_completed() { local v; v=$(sed -n 's/^storm: [0-9]* iterations, \([0-9]*\) completed,.*/\1/p' "$out.$1"); echo "${v:-0}"; }

ktap_check "topology $TOPOLOGY is up" topology_up
ktap_print_msg "$iterations iterations, seed $seed, $clients clients, progress every $progress, bounds of ${bound}s"

# --- a. kill -9 of clients and of the server in the middle of a storm ---------------------
start_server a.server $SID_A $((seed * 1000 + 50))
server_pid=$pid
victim1=$((RANDOM % clients))
victim2=$(((victim1 + 1 + RANDOM % (clients - 1)) % clients))
declare -A client_pid kill_at
for i in $(seq 0 $((clients - 1))); do
	n=$share
	if [ "$i" = "$victim1" ] || [ "$i" = "$victim2" ]; then
		n=$ENDLESS
		kill_at[$i]=$(pick $((share / 10)) $((share / 2)))
	fi
	start_client a.client$i $SID_A $((seed * 1000 + i)) $n
	client_pid[$i]=$pid
done
ktap_print_msg "round a: clients $victim1 and $victim2 are killed at ${kill_at[$victim1]} and ${kill_at[$victim2]} connections started"
victim_rcs=() survivors=() names=()
for v in $victim1 $victim2; do
	wait_until "$bound" progress_reached a.client$v "${kill_at[$v]}"
	kill -KILL "${client_pid[$v]}"
	finish "${client_pid[$v]}"
	victim_rcs+=("${rcs[@]}")
	start_client a.client$v.again $SID_A $((seed * 1000 + 10 + v)) $share
	survivors+=("$pid") names+=("a.client$v.again")
	if [ "$v" = $victim1 ]; then
		# The server too, while the replacement storms at it; clients meanwhile get REJ 8.
		wait_until "$bound" progress_reached a.client$v.again "$progress"
		kill -KILL $server_pid
		finish $server_pid
		server_rc=${rcs[0]}
		start_server a.server.again $SID_A $((seed * 1000 + 51))
		server_pid=$pid
	fi
done
ktap_check "a: clients $victim1 and $victim2 killed with kill -9 mid-storm (${victim_rcs[*]})" all_are 137 "${victim_rcs[@]}"
server_replaced() { [ "$server_rc" = 137 ] && file_has '^storm: server listening' "$out.a.server.again"; }
ktap_check "a: the server killed with kill -9 mid-storm ($server_rc), and a new one listened" server_replaced
for i in $(seq 0 $((clients - 1))); do
	[ "$i" = "$victim1" ] || [ "$i" = "$victim2" ] || { survivors+=("${client_pid[$i]}") names+=("a.client$i"); }
done
finish "${survivors[@]}"
client_rcs=("${rcs[@]}")
total=0
for n in "${names[@]}"; do total=$((total + $(summary_iterations "$n"))); done
kill -TERM $server_pid
finish $server_pid
server_rc=${rcs[0]}
show "${names[@]}" a.server a.server.again
storm_done() { [ "$total" -ge "$iterations" ] && all_are 0 "${client_rcs[@]}"; }
ktap_check "a: $total connections (at least $iterations) by the other clients and the replacements, all exited 0 (${client_rcs[*]})" \
	storm_done
server_done() { [ "$server_rc" = 0 ] && file_has '^storm: server: ' "$out.$1"; }
ktap_check "a: the server exits 0 on SIGTERM with its summary ($server_rc)" server_done a.server.again
ktap_check "a: no CEP is left" wait_until 60 ceps_are 0

# --- b. rmmod in the middle of a storm --------------------------------------------------
start_server b.server $SID_B $((seed * 1000 + 150))
server_pid=$pid
start_client b.client0 $SID_B $((seed * 1000 + 100)) $ENDLESS
pids=("$pid")
start_client b.client1 $SID_B $((seed * 1000 + 101)) $ENDLESS
pids+=("$pid")
refused=0 attempts=0
for quarter in 1 2 3; do
	wait_until "$bound" progress_reached b.client0 $((share * quarter / 4 / progress * progress + progress)) || break
	attempts=$((attempts + 1))
	if rmmod cepm >"$out.b.rmmod" 2>&1; then
		insmod "$CEPM_KO"
	elif grep -q 'in use' "$out.b.rmmod" && cepm_loaded; then
		refused=$((refused + 1))
	fi
	show_files "$out.b.rmmod"
done
ktap_check "b: rmmod cepm refused ($refused of $attempts attempts, 3 due) while the storm runs" \
	test "$refused" = 3
# Still loaded, and still working: the storm goes on for another quarter.
went_on() { cepm_loaded && progress_reached b.client0 $((share / progress * progress + progress)); }
ktap_check "b: cepm is still loaded and the storm goes on" wait_until "$bound" went_on
kill -TERM "${pids[@]}"
finish "${pids[@]}"
client_rcs=("${rcs[@]}")
kill -TERM $server_pid
finish $server_pid
server_rc=${rcs[0]}
show b.client0 b.client1 b.server
completed=$(($(summary_completed b.client0) + $(summary_completed b.client1)))
stopped_cleanly() { all_are 0 "${client_rcs[@]}" && server_done b.server && [ "$completed" -gt 0 ]; }
ktap_check "b: clients (${client_rcs[*]}) and server ($server_rc) exit 0 on SIGTERM, $completed connections completed" \
	stopped_cleanly

# --- c. device removal in the middle of a storm -----------------------------------------
start_server c.server $SID_C $((seed * 1000 + 250))
server_pid=$pid
start_client c.client0 $SID_C $((seed * 1000 + 200)) $ENDLESS
pids=("$pid")
start_client c.client1 $SID_C $((seed * 1000 + 201)) $ENDLESS
pids+=("$pid")
at=$(pick $((share / 4)) $((share / 2)))
deleted() { progress_reached c.client0 "$at" && rdma link delete "$RXE_DEV"; }
ktap_check "c: rdma link delete $RXE_DEV after $at connections of the storm" wait_until "$bound" deleted
finish "${pids[@]}"
client_rcs=("${rcs[@]}")
heard_it() {
	all_are 0 "${client_rcs[@]}" &&
		grep -q '^storm: client stopped early: device removed' "$out.c.client0" &&
		grep -q '^storm: client stopped early: device removed' "$out.c.client1"
}
ktap_check "c: both clients heard the removal and exited 0 (${client_rcs[*]})" heard_it
rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"
ktap_check "c: $RXE_DEV added back and managed again" wait_until 20 port_listed "$RXE_DEV" 1
kill -TERM $server_pid
finish $server_pid
server_rc=${rcs[0]}
show c.client0 c.client1 c.server
ktap_check "c: the server exits 0 on SIGTERM ($server_rc)" server_done c.server

# --- d. afterwards ----------------------------------------------------------------------
ktap_check "d: every storm process has exited (${#all_pids[@]} started)" exited "${all_pids[@]}"
ktap_check "d: no CEP is left" wait_until 60 ceps_are 0
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --cm-only --service-id $SID_AFTER --timeout-ms 30000 \
	>"$out.after-accept" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.after-accept"
connect_after() {
	"$CEPMCTL" connect --cm-only --service-id $SID_AFTER --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.after" 2>&1 &&
		wait $apid
}
ktap_check "d: and a fresh connection works" connect_after
ktap_finished
