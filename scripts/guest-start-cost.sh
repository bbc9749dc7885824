#!/bin/sh
# scripts/vm -- scripts/guest-start-cost.sh: what one process start costs in the test guest.
# Prints the mean of 20 starts of each command, and how the root is mounted.  The figures in
# docs/design.md ("The test VM's root filesystem") come from it.
each() {
	start=$(date +%s%N)
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		"$@" >/dev/null 2>&1
	done
	end=$(date +%s%N)
	echo "$(((end - start) / 20000000)) ms per start: $*"
}
each /bin/true
each grep -q x /dev/null
each ip -br link
each "${CEPMCTL:-target/release/cepmctl}" --version
each "${CEPMCTL:-target/release/cepmctl}" list
mount | grep ' on / '
