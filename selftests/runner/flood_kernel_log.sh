#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fixture, not a selftest: writes LINES (default 4000) lines of about 100 bytes each into the
# kernel log through /dev/kmsg, more than the default 256 KiB ring buffer holds, as
# mad_fuzz.sh's 10^6 MADs do in the KASAN lane (ib_core logs each unsupported base version:
# about 1.85 MB in that lane). After it, a kernel whose log buffer is the default has lost its
# boot lines. Used by hand to show that the selftests notice (docs/hardening.md).
lines=${1:-4000}
for ((i = 1; i <= lines; i++)); do
	printf 'cepm flood_kernel_log: line %6d of %6d, filling the ring buffer as a long fuzzing run does\n' \
		"$i" "$lines" >/dev/kmsg
done
echo "flood_kernel_log: $lines lines written; the log now begins: $(dmesg | head -n 1)"
