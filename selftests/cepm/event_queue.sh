#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The bounded event queue (CEPM_EVENT_QUEUE_MAX, the event_queue_max module parameter), with
# a bound small enough to reach under TCG: cepm reloaded with event_queue_max=16, then
# ioctl_abi's full_event_queue_says_overflow (20 SIDR_REQs fail unread: 16 events, then
# EOVERFLOW once, then EAGAIN), post_event_full_queue_is_enospc (16 posted, the 17th refused)
# and claimed_requests_leave_no_stale_events.  The trap (and the
# runner's baseline repair) loads cepm with its defaults again.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 2

out=$CEPM_ROOT/out/event_queue.$$
trap 'rmmod cepm 2>/dev/null; insmod "$CEPM_KO"; rm -f "$out"' EXIT
reload() { rmmod cepm && insmod "$CEPM_KO" "$@" && wait_until 20 port_listed "$RXE_DEV" 1; }
ktap_check "cepm reloaded with event_queue_max=16" reload event_queue_max=16
CEPM_EVENT_QUEUE_MAX=16 "$CEPM_ROOT/out/selftests/ioctl_abi" -t full_event_queue_says_overflow \
	-t post_event_full_queue_is_enospc -t claimed_requests_leave_no_stale_events >"$out" 2>&1
rc=$?
show_files "$out"
ran() { grep -Eq "^ok [0-9]+ cepm\.$1\$" "$out"; }
all_ran() {
	[ "$rc" = 0 ] && ran full_event_queue_says_overflow && ran post_event_full_queue_is_enospc &&
		ran claimed_requests_leave_no_stale_events
}
ktap_check "a full queue says EOVERFLOW once (not skipped), refuses a posted event, and claimed requests leave no stale event" all_ran
ktap_finished
