#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The runner keeps tests independent: a test that breaks the guest and then hangs (the
# fixture selftests/runner/hang_and_break.sh) is stopped at its time limit and fails alone;
# the runner restores the guest's baseline and says so, and the test after it passes.  A test
# that passes but leaves a process running (the fixture selftests/runner/leave_running.sh)
# fails: what it left would hold /dev/cepm, CEPs or a port into the next checks.  This
# runs selftests/run.sh itself, nested, with a 15 s limit for the fixture, times
# CEPM_LIMIT_SCALE up to 4 (breaking the guest takes it 5 to 8 s under TCG, 16 s under KASAN,
# and the fixture prints how long; every second of the limit over that is idle).  A second
# nested run then starts with cepm unloaded, as one does after a run that ended with
# dmesg_clean.sh, and the runner must load it first.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 12

out=$CEPM_ROOT/out/runner_isolation.$$
trap 'rm -f "$out".*' EXIT
fixture=$CEPM_ROOT/selftests/runner/hang_and_break.sh
leaver=$CEPM_ROOT/selftests/runner/leave_running.sh
# The nested runs scale their limits by at most 4: enough for breaking the guest under KASAN,
# and the fixture then hangs 60 s, not the 375 s of the KASAN lane's scale of 25.
scale=$((${CEPM_LIMIT_SCALE:-1} < 4 ? ${CEPM_LIMIT_SCALE:-1} : 4))
fixture_limit=15
# The fixture ignores SIGTERM: only the KILL ends it, and the 10 s the runner usually leaves a
# test's cleanup trap before it would be idle here.
CEPM_KILL_GRACE=1 CEPM_LIMIT_SCALE=$scale CEPM_RUN_NESTED=1 "$CEPM_ROOT/selftests/run.sh" "$fixture:$fixture_limit" "$leaver" cep_connect.sh >"$out.ktap" 2>&1
rc=$?
show_files "$out.ktap"
ktap_check "the nested run fails (two tests failed)" test $rc != 0
ktap_check "the fixture broke the guest before it hung" \
	grep -q '^# hang_and_break: guest broken, now hanging' "$out.ktap"
# The runner scales the fixture's limit too.
limit=$((fixture_limit * scale))
ktap_check "the hanging test is stopped at its $limit s limit and reported as a timeout" \
	grep -q "^not ok 1 selftests: cepm: $fixture # TIMEOUT ${limit}s" "$out.ktap"
ktap_check "the runner reports what it found broken and that it restored the baseline" \
	sh -c "grep -q '^# baseline: the guest differs' '$out.ktap' && grep -q '^# baseline: restored' '$out.ktap'"
# Each kind of breakage is a fact of its own in the runner's report, so that its repair runs
# (baseline_restore repairs only what differs).
named() {
	local fact
	for fact in 'qdisc netem' 'neighbour 10\.77\.0\.2 lladdr .* PERMANENT' 'netns cepm_peer' 'rdma rxe1 veth1' \
		'module rdma_ucm loaded' 'cepm parameter event_queue_max=16' 'drop_rx_count 3'; do
		grep -q "^#   extra:   $fact\$" "$out.ktap" || { echo "# not named: $fact"; return 1; }
	done
}
ktap_check "the runner names each thing the fixture broke" named
# The leaver's own lines, from its entry's header to its verdict.
left_running_fails() {
	sed -n "\|^# selftests: cepm: $leaver\$|,\|^not ok 2 selftests: cepm: $leaver # exit=1, |p" "$out.ktap" >"$out.leaver"
	grep -q '^not ok 2 ' "$out.leaver" &&
		grep -q '^# # baseline: killed processes the test left running: sleep x1$' "$out.leaver"
}
ktap_check "a test that passes but leaves a process running fails, and the runner says what it killed" \
	left_running_fails
ktap_check "the test after them passes" grep -q '^ok 3 selftests: cepm: cep_connect.sh # ' "$out.ktap"
ktap_check "the nested run counts exactly two failures" grep -q '^# cepm selftests: 1 passed, 2 failed' "$out.ktap"
# CI shows only the end of a run's output: after the last test, the runner repeats what each
# failed test said of its failing checks and of the waits that gave up.
digest_after_last_test() {
	sed -n '/^ok 3 selftests: cepm: cep_connect.sh /,$p' "$out.ktap" >"$out.digest"
	grep -q "^# not ok 1 selftests: cepm: $fixture # TIMEOUT ${limit}s\$" "$out.digest" &&
		grep -q '^#   not ok 1 hang_and_break: a check that fails on purpose$' "$out.digest" &&
		grep -q '^#   # wait_until: still false after 1 s: false$' "$out.digest"
}
ktap_check "after the last test, the runner repeats the failed test's failing check and the wait that gave up" \
	digest_after_last_test
# The fixture reloaded cepm with other parameters: they must show in sysfs, for users and for
# the baseline, which must have seen them and loaded cepm with its defaults again.
param() { cat "/sys/module/cepm/parameters/$1" 2>/dev/null; }
defaults() { [ "$(param event_queue_max)" = 4096 ] && [ "$(param timewait_ms)" = 0 ]; }
ktap_check "cepm's parameters show in sysfs, back at their defaults" defaults

# A second run in the same boot, after one that ended with dmesg_clean.sh (which unloads cepm
# on purpose): it must start from the baseline, cepm loaded, not take "no cepm" as its own.
rmmod cepm
# mad_counted.sh: a short test that fails without cepm (it reads cepm's counters).
CEPM_LIMIT_SCALE=$scale CEPM_RUN_NESTED=1 "$CEPM_ROOT/selftests/run.sh" mad_counted.sh >"$out.second" 2>&1
rc=$?
show_files "$out.second"
ktap_check "a run that starts with cepm unloaded loads it and says so" \
	grep -q '^# baseline: cepm was not loaded' "$out.second"
ktap_check "... and its test passes" \
	sh -c "test $rc = 0 && grep -q '^ok 1 selftests: cepm: mad_counted.sh # ' '$out.second'"
ktap_finished
