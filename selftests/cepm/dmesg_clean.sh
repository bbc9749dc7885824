#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs last: the kernel log of the whole run has no splat, and kmemleak finds no new leak once
# cepm is unloaded. The log must still begin with the boot: a ring buffer that wrapped has lost
# the run's first lines, splats included, and a clean tail would prove nothing. And the guest's
# clock must not have fallen back to an emulated timer: under TCG the clocksource watchdog can
# declare the TSC (the host's cycle counter there) unstable 24 to 46 s after boot and switch
# to the HPET, whose every read traps into QEMU, which slows the guest and spoils perftest's
# clock calibration (scripts/vm boots with tsc=reliable against it). Under KVM the clock is
# kvm-clock.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 4

# Lockdep, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, refcount, KASAN, KFENCE and slub_debug reports all
# start with one of these;
# cepm's own unload reports of what it found still referenced end in "at unload".
splats='cepm: .* at unload|WARNING:|BUG:|Oops|general protection|Call Trace:|INFO: (lockdep|task .* blocked|possible|inconsistent)|DEBUG_LOCKS_WARN_ON|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|list_(add|del) corruption|UBSAN|Kernel panic|refcount_t:|unreferenced object|BUG [^ ]+ \((Not t|T)ainted\)|KFENCE:'

kmemleak=/sys/kernel/debug/kmemleak
# Unloaded first, so that the scan sees whatever the module failed to free.
[ -d /sys/module/cepm ] && rmmod cepm
if [ -w $kmemleak ]; then
	# kmemleak ignores objects younger than 5 s: let the unload's leftovers age past that.
	sleep 6
	echo scan >$kmemleak
	echo scan >$kmemleak
	leaks=$(cat $kmemleak)
	[ -z "$leaks" ] || { ktap_print_msg "kmemleak:"; printf '%s\n' "$leaks" | head -60 | sed 's/^/# /'; }
	ktap_check "kmemleak reports no new leak" test -z "$leaks"
else
	ktap_test_fail "kmemleak is not available (CONFIG_DEBUG_KMEMLEAK, debugfs)"
fi

kernel_log=$(dmesg)
first=${kernel_log%%$'\n'*}
ktap_check "the kernel log still begins with the boot (its first line: ${first:0:60})" \
	eval '[[ $first =~ ^\[\ *0\.000000\]\  ]]'
bad=$(grep -E "$splats" <<<"$kernel_log" || true)
[ -z "$bad" ] || { ktap_print_msg "kernel log:"; sed 's/^/# /' <<<"$kernel_log" | tail -120; }
ktap_check "kernel log has no BUG, WARN, lockdep or leak report" test -z "$bad"
read -r clock </sys/devices/system/clocksource/clocksource0/current_clocksource
emulated_timer() { [[ $clock == @(hpet|acpi_pm|jiffies) ]]; }
ktap_check "the guest's clock is not an emulated timer ($clock)" eval '! emulated_timer'
ktap_finished
