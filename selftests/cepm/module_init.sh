#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A load whose init fails (the inject_init_failure parameter) fails with ENOMEM and leaves
# nothing behind, and /dev/cepm never appears in it: userspace must not open a device whose
# module is about to go.  The kernel's uevents are the witness (udevadm monitor), with a
# uevent of our own as the sentinel after each load, so that nothing is timed.  The module is
# loaded normally at the end, as the runner's baseline wants it.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 7

events=$(mktemp)
monitor_pid=
stop_monitor() { [ -z "$monitor_pid" ] || kill "$monitor_pid" 2>/dev/null; wait 2>/dev/null; monitor_pid=; }
cleanup() { stop_monitor; rm -f "$events"; cepm_loaded || insmod "$CEPM_KO"; }
trap cleanup EXIT

# A sentinel: a uevent that udevadm prints after every uevent sent before it.
SENTINEL=/devices/virtual/mem/null
monitor_start() {
	: >"$events"
	udevadm monitor --kernel >"$events" 2>&1 &
	monitor_pid=$!
	wait_until 10 file_has 'monitor will print' "$events"
}
saw_sentinel() { file_has "change *$SENTINEL " "$events"; }
monitor_finish() {
	echo change >"/sys$SENTINEL/uevent" && wait_until 10 saw_sentinel
	local rc=$?
	stop_monitor
	return $rc
}
no_cepm_uevent() { ! grep -E ' /devices/virtual/misc/cepm ' "$events"; }

# failed_load STEP: init step STEP fails; the load reports ENOMEM and leaves no module behind.
failed_load() {
	local err
	err=$(insmod "$CEPM_KO" inject_init_failure="$1" 2>&1) && return 1
	echo "$err" | grep -q 'Cannot allocate memory' && ! cepm_loaded && test ! -e /dev/cepm
}

rmmod cepm
for step in 1:ib_client 2:/dev/cepm; do
	monitor_start || ktap_test_fail "udevadm monitor started"
	ktap_check "init fails at the $step registration with ENOMEM, and no module is left" \
		failed_load "${step%%:*}"
	monitor_finish || ktap_test_fail "the sentinel uevent arrived"
	ktap_check "/dev/cepm never appeared in that load" no_cepm_uevent
done

ktap_check "a normal load after the failed ones" insmod "$CEPM_KO"
ktap_check "it manages $RXE_DEV" wait_until 20 port_listed "$RXE_DEV" 1
no_cepm_errors() { ! dmesg | grep -E 'cepm: .*(still registered|at unload|error)'; }
ktap_check "no cepm error in the log" no_cepm_errors
ktap_finished
