#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# After load, cepm owns the CM class on rxe0 and /dev/cepm reports it.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

abi=$(sed -n 's/^#define CEPM_ABI_VERSION \([0-9]*\).*/\1/p' "$CEPM_ROOT/include/uapi/cepm.h")

ktap_check "module is loaded" cepm_loaded
ktap_check "/dev/cepm is a character device" test -c /dev/cepm
ktap_check "ioctl reports ABI version $abi" test "$("$CEPMCTL" abi)" = "$abi"
listed_as_roce() { "$CEPMCTL" ports | grep -qxF "$RXE_DEV port 1 (RoCE)"; }
logged_managing() { dmesg | grep -qF "cepm: $RXE_DEV: managing the CM on 1 port(s)"; }
ktap_check "$RXE_DEV port 1 is listed as RoCE" listed_as_roce
ktap_check "the kernel log says cepm manages $RXE_DEV" logged_managing
ktap_finished
