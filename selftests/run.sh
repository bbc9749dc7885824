#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs every cepm selftest in this one boot (inside scripts/vm) and prints KTAP.
# Usage: selftests/run.sh [TEST[@TOPOLOGY][:LIMIT]...]   (default: all, in the order below;
# dmesg_clean.sh always last)
#        selftests/run.sh --list   prints the default list, one entry a line (runs nothing)
#   TEST      a script or program in selftests/cepm/ (or out/selftests/), or a path
#   TOPOLOGY  loopback or two-hosts (CEPM_TOPOLOGY, see cepm/lib.sh); rdmacm_portals.sh takes
#             stock too
#   LIMIT     seconds before the test is stopped, instead of its entry in cepm/limits
#             (either multiplied by CEPM_LIMIT_SCALE, default 1)
# A test still running at its limit gets SIGTERM, then SIGKILL CEPM_KILL_GRACE seconds later
# (default 10: time for a test's own cleanup trap).
# Each test is independent of the one before it: whatever its result, the runner puts the
# guest back to its baseline afterwards (baseline.sh) and says so in a '#' line if it had to;
# a test that passed but left a process running fails.  After the last test, what each failed
# test said of its failing checks is repeated, above the summary that ends the output.
# CEPM_RUN_NESTED=1 (a test of this runner running it) leaves kmemleak alone and skips
# dmesg_clean.sh: the outer run judges those.
# Exit status: 0 when every test passed or skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# TEST@TOPOLOGY runs TEST with CEPM_TOPOLOGY=TOPOLOGY (see topology_up in cepm/lib.sh).
both() { local t; for t; do echo "$t@loopback" "$t@two-hosts"; done; }
all=(runner_isolation.sh module_ports.sh ioctl_abi ioctl_fuzz.sh event_queue.sh mad_counted.sh stateless_replies.sh peer_unresolved.sh@two-hosts cep_listen.sh
	cep_rej_match.sh cep_peer_tables.sh cep_ignored.sh cep_ah.sh cep_timeout_rej.sh cep_req_validation.sh
	$(both cep_connect.sh cep_message_details.sh cep_failures.sh cep_mra.sh cep_races.sh cep_stale.sh cep_scale.sh)
	cep_wire_fields.sh@two-hosts cep_xrc.sh@two-hosts mad_fuzz.sh@two-hosts $(both storms.sh)
	cep_sidr.sh cep_lossy.sh verbs_pingpong.sh $(both device_removal.sh) device_removal_race.sh interop_stock.sh interop_rping.sh interop_scale.sh
	$(both rdmacm_tools.sh) $(both rdmacm_portals.sh) $(both middleware.sh) rdmacm_failures.sh@two-hosts rdmacm_async.sh@two-hosts $(both rdmacm_multicast.sh) rdmacm_ports.sh netns.sh@two-hosts netns_exclusive.sh rdmacm_stock.sh rdmacm_fidelity.sh rdmacm_portals.sh@stock middleware_stock.sh coexist_ib_cm.sh rmmod.sh module_init.sh privileges.sh)
if [ "${1:-}" = --list ]; then
	printf '%s\n' "${all[@]}"
	exit 0
fi
out=${CEPM_ROOT:?}/out/selftests
. "$here/baseline.sh"
tests=("${@:-${all[@]}}")
nested=${CEPM_RUN_NESTED:-0}
[ "$nested" = 1 ] || tests+=(dmesg_clean.sh)

# Time limits: cepm/limits, one "TEST SECONDS" a line; DEFAULT for the others.
declare -A limit_of
while read -r name secs _; do
	case $name in '' | '#'*) continue ;; esac
	limit_of[$name]=$secs
done <"$here/cepm/limits"

# Leak suspects from boot and setup are not ours to judge: scan once, then forget them.
kmemleak=/sys/kernel/debug/kmemleak
if [ "$nested" != 1 ] && [ -w $kmemleak ]; then
	echo scan >$kmemleak
	echo clear >$kmemleak
	# dmesg_clean.sh scans when the run ends; kmemleak's own scans (a minute after boot, then
	# every ten) would cost the tests 2 s of CPU each under TCG and find nothing sooner.
	echo scan=off >$kmemleak
fi

read -r pid_max </proc/sys/kernel/pid_max
qp1_state() {
	[[ $(rdma res show qp link rxe0/1 lqpn 1 2>/dev/null) =~ state\ [A-Z]+ ]] && echo "${BASH_REMATCH[0]}"
}
qp1_ready() { [ ! -e /sys/class/infiniband/rxe0 ] || [[ $(rdma res show qp link rxe0/1 lqpn 1 2>/dev/null) =~ state\ RTS ]]; }

# A pipe nobody writes to, held open both ways: `read -t` on it sleeps inside the shell.
exec {idle_fd}<> <(:)
# run_limited LIMIT GRACE CMD...: runs CMD in a process group of its own; at LIMIT seconds
# SIGTERM goes to the group, GRACE seconds later SIGKILL, as with timeout(1)'s -k GRACE LIMIT,
# and the status is then 124.  Without timeout's process start: about 0.15 s under TCG.
run_limited() {
	local limit=$1 grace=$2 pid watchdog rc fired=$out/.limit-fired.$BASHPID
	shift 2
	rm -f "$fired"
	set -m
	"$@" &
	pid=$!
	set +m
	{
		read -rt "$limit" -u "$idle_fd"
		: >"$fired"
		kill -TERM -"$pid" && kill -CONT -"$pid"
		read -rt "$grace" -u "$idle_fd"
		kill -KILL -"$pid"
	} 2>/dev/null &
	watchdog=$!
	wait "$pid"
	rc=$?
	kill "$watchdog" 2>/dev/null
	if [ -e "$fired" ]; then
		rm -f "$fired"
		rc=124
	fi
	return $rc
}

echo "TAP version 13"
# The first tshark or dumpcap of a boot reads Wireshark's libraries and registers every
# dissector: about 10 s under TCG with the root over virtio-fs, one to two minutes over 9p
# (without virtiofsd), more on a cold host page cache.  Done once, outside any test's limit,
# right before the first test whose script runs tshark: a run of tests that never do (the
# KASAN lane's stress part, say) does not pay for it.
warmed_up=
warm_up_tshark_for() {
	local text=
	[ -z "$warmed_up" ] && [ "$nested" != 1 ] && command -v tshark >/dev/null || return 0
	# Read by the shell, not grep: this runs before every test until the first that needs it.
	read -rd '' text <"$1" 2>/dev/null
	[[ $text =~ (^|[^[:alnum:]_])tshark([^[:alnum:]_]|$) ]] || return 0
	warmed_up=1
	local start=$SECONDS
	tshark -G protocols >/dev/null 2>&1
	dumpcap -D >/dev/null 2>&1
	echo "# warm-up: tshark and dumpcap loaded in $((SECONDS - start))s"
}
# The baseline has cepm loaded.  dmesg_clean.sh, which ends a run, unloads it: a second run in
# the same boot would otherwise take a guest without /dev/cepm as its baseline.
if [ ! -d /sys/module/cepm ]; then
	baseline_note "cepm was not loaded (dmesg_clean.sh, which ends a run, unloads it); loading it"
	if ! baseline_load_cepm || ! baseline_await_rxe0; then
		echo "Bail out! cepm could not be loaded, or rxe0 did not join its ports"
		exit 1
	fi
fi
baseline_silent_peers || { echo "Bail out! the silent peers' neighbour entries could not be added"; exit 1; }
BASELINE_EXPECTED=$(baseline_snapshot)
echo "1..${#tests[@]}"
n=0 failed=0 digest=()
# What a test said of why it failed (its "not ok" lines and what it printed just before the
# first, a bail-out, its totals, given-up waits, what it left running; builtins only: no
# process per line) and what the runner found after it, and how many of those lines the
# digest at the end repeats.
said=$out/.said.$$ digest_lines=56 context_lines=32
# for_digest LINE: LINE among what the test just run said of why it failed.
for_digest() { printf '#   %s\n' "$1" >>"$said"; }
# runner_says LINE: the runner's judgement of the test just run, in the log and the digest.
runner_says() {
	echo "$1"
	for_digest "$1"
}
for t in "${tests[@]}"; do
	n=$((n + 1))
	limit=
	case $t in *:*) limit=${t##*:} t=${t%:*} ;; esac
	name=${t%@*} topology=
	[ "$name" = "$t" ] || topology=${t#*@}
	case $name in
	*/*) prog=$name ;;
	*) if [ -x "$here/cepm/$name" ]; then prog=$here/cepm/$name; else prog=$out/$name; fi ;;
	esac
	limit=${limit:-${limit_of[${name##*/}]:-${limit_of[DEFAULT]}}}
	# A slower kernel (KASAN: five to six times) scales every limit alike.
	limit=$((limit * ${CEPM_LIMIT_SCALE:-1}))
	warm_up_tshark_for "$prog"
	# A script that asks for bash through env gets it straight away: one exec fewer (about
	# 0.1 s under TCG).
	cmd=("$prog")
	shebang=
	read -r shebang <"$prog" 2>/dev/null
	[ "$shebang" != '#!/usr/bin/env bash' ] || cmd=(bash "$prog")
	echo "# selftests: cepm: $t"
	start=$SECONDS
	: >"$said"
	# Under TCG a process start costs 0.06 to 0.2 s: how many a test starts shows where its
	# time goes.  The last PID handed out (/proc/loadavg's last field) counts them, every fork
	# and thread, about: PIDs wrap at pid_max (once is counted right), skip those in use.
	read -r _ _ _ _ pid_before </proc/loadavg
	# And how busy the vCPUs were: a test that leaves them idle is waiting on a timer, where
	# a shorter wait would save its time (the "cpu" line of /proc/stat, in ticks).
	read -r _ user0 nice0 system0 idle0 iowait0 irq0 softirq0 _ </proc/stat
	tag=$$.$n
	# run_limited signals the test's whole process group; KILL if TERM is not enough. What
	# the test left running (in another session, say) is killed right after, inside the
	# pipeline: it may hold the pipe open, and the runner would wait for it.  The "# " prefix
	# is added by a loop of builtins, not sed: one process fewer per test.
	(
		cd "$here/cepm" && CEPM_TEST_TAG=$tag CEPM_TOPOLOGY=${topology:-loopback} \
			run_limited "$limit" "${CEPM_KILL_GRACE:-10}" "${cmd[@]}"
		test_rc=$?
		# What a test leaves running would hold /dev/cepm, CEPs or a port into the next
		# test: a test that passed or skipped fails for it (one stopped at its limit has failed
		# already).
		baseline_kill_tagged "$tag" || { [ $test_rc != 0 ] && [ $test_rc != 4 ]; } || test_rc=1
		exit $test_rc
	) 2>&1 | {
		# What the test printed since its previous result, of which the digest keeps the
		# last $context_lines before the first failing check: what a hung exchange said.
		recent=() first_failure=1
		while IFS= read -r line || [ -n "$line" ]; do
			printf '# %s\n' "$line"
			if [[ $line == 'not ok '* ]] && [ $first_failure = 1 ]; then
				first_failure=0
				skip=$((${#recent[@]} > context_lines ? ${#recent[@]} - context_lines : 0))
				for l in "${recent[@]:skip}"; do for_digest "$l"; done
			fi
			if [[ $line == 'not ok '* || $line == 'Bail out!'* || $line == '# Totals:'* ||
				$line == '# wait_until: still false'* || $line == '# baseline: killed processes'* ]]; then
				for_digest "$line"
				# In the digest already: not again among the lines before a failure.
				[[ $line == 'not ok '* ]] || continue
			fi
			case $line in 'ok '* | 'not ok '*) recent=() ;; *) recent+=("$line") ;; esac
		done
	}
	rc=${PIPESTATUS[0]}
	took="$((SECONDS - start))s"
	read -r _ _ _ _ pid_after </proc/loadavg
	read -r _ user1 nice1 system1 idle1 iowait1 irq1 softirq1 _ </proc/stat
	busy=$((user1 + nice1 + system1 + irq1 + softirq1 - user0 - nice0 - system0 - irq0 - softirq0))
	ticks=$((busy + idle1 + iowait1 - idle0 - iowait0))
	echo "# about $(((pid_after - pid_before + pid_max) % pid_max)) PIDs used in $took," \
		"the vCPUs $((ticks > 0 ? 100 * busy / ticks : 0)) % busy"
	# rxe leaves a QP in the error state for good when a send meets a transmit error (a
	# qdisc drop, e.g. with veth0's carrier gone): for rxe0's QP1 every later CM exchange
	# would then time out.  The test that left it so fails; rxe0 is made anew for the next.
	if ! qp1_ready; then
		runner_says "# rxe0's QP1 is no longer in RTS ($(qp1_state)): a MAD send failed in rxe"
		[ "$rc" = 0 ] && rc=1
		rdma link delete rxe0
	fi
	# dmesg_clean.sh ends the run with cepm unloaded on purpose.
	if [ "$name" != dmesg_clean.sh ] && ! baseline_restore; then
		for_digest "# baseline: the runner could not restore the guest (its '# baseline:' lines above say what differs)"
		[ "$rc" != 0 ] || rc=1
	fi
	case $rc in
	0) verdict="ok $n selftests: cepm: $t # $took" ;;
	4) verdict="ok $n selftests: cepm: $t # SKIP" ;;
	124 | 137) verdict="not ok $n selftests: cepm: $t # TIMEOUT ${limit}s" ;;
	*) verdict="not ok $n selftests: cepm: $t # exit=$rc, $took" ;;
	esac
	echo "$verdict"
	if [[ $verdict == 'not ok '* ]]; then
		failed=$((failed + 1))
		mapfile -t lines <"$said"
		digest+=("# $verdict" "${lines[@]:0:$digest_lines}")
		[ ${#lines[@]} -le $digest_lines ] || digest+=("#   ... and $((${#lines[@]} - digest_lines)) more")
	fi
done
rm -f "$said"
# CI shows only the end of a run's output: each failed test's failing checks and the waits
# that gave up, again, where they are seen.
[ $failed = 0 ] || printf '%s\n' "# why the failed tests failed (their failing checks, given-up waits, what they left running, what the runner found):" "${digest[@]}"
echo "# cepm selftests: $((n - failed)) passed, $failed failed"
[ $failed = 0 ]
