#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rmmod is clean with a live device, repeatedly.  The module is loaded again at the end, as the
# runner's baseline wants it; dmesg_clean.sh unloads it before its kmemleak scan.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

ktap_check "rmmod with $RXE_DEV managed" rmmod cepm
ktap_check "/dev/cepm is gone" test ! -e /dev/cepm
ok=true
for _ in 1 2 3; do
	insmod "$CEPM_KO" && port_listed "$RXE_DEV" 1 && rmmod cepm || ok=false
done
ktap_check "three more load/unload cycles" $ok
ktap_check "module is unloaded" test ! -d /sys/module/cepm
insmod "$CEPM_KO"
no_cepm_errors() { ! dmesg | grep -E 'cepm: .*(still registered|error)'; }
ktap_check "no cepm error in the log" no_cepm_errors
ktap_finished
