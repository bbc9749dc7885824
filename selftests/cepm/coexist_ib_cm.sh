#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# When the in-tree ib_cm already owns the CM class, cepm loads, skips the device with one clear
# log line, and manages it again once ib_cm is gone.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
modinfo ib_cm >/dev/null 2>&1 || { ktap_skip_all "ib_cm not available"; exit "$KSFT_SKIP"; }
ktap_set_plan 5

rmmod cepm
modprobe ib_cm
mark_dmesg
ktap_check "cepm loads while ib_cm owns $RXE_DEV" insmod "$CEPM_KO"
ktap_check "no port is managed" test "$(managed_ports)" = 0
ktap_check "exactly one log line explains the skip" test \
	"$(dmesg_since_mark | grep -c "cepm: $RXE_DEV: port 1: cannot register the CM MAD agent (EINVAL); another CM such as ib_cm owns it; skipping this device")" = 1
rmmod cepm
modprobe -r ib_cm
ktap_check "cepm loads again after ib_cm is gone" insmod "$CEPM_KO"
ktap_check "$RXE_DEV port 1 managed again" port_listed "$RXE_DEV" 1
ktap_finished
