#!/usr/bin/env bash
# A log redirected to a file keeps everything: what the host printed before the guest booted,
# the guest's own output, and what came after.  (QEMU opens the console's path; handed
# /proc/self/fd/1 of a regular file, it truncates the file.)  And a long command reaches the
# guest whole: `make selftest` hands the guest all 48 entries, and the kernel's command line,
# which vng once carried the command in, holds 2048 bytes.  One quick boot, no guest setup.
set -euo pipefail
CEPM_LOG_TAG=vm-log
. "$(dirname "$0")/common.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# 400 words, 4,000 bytes in all, each argument counted and checksummed in the guest.
long=()
for i in $(seq 1000 1399); do long+=("w$i"); done
long_sum=$(printf '%s\n' "${long[@]}" | cksum)
{
	echo "host: before the guest"
	echo "host: stderr before the guest" >&2
	CEPM_VM_NO_SETUP=1 "$CEPM_ROOT/scripts/vm" -- sh -c 'echo "guest: stdout"; echo "guest: stderr" >&2
		echo "guest: $# arguments, $(printf "%s\n" "$@" | cksum)"' sh "${long[@]}" ||
		echo "host: scripts/vm failed ($?)"
	echo "host: after the guest"
} >"$log" 2>&1
missing=0
for line in "host: before the guest" "host: stderr before the guest" "guest: stdout" "guest: stderr" \
	"guest: ${#long[@]} arguments, $long_sum" "host: after the guest"; do
	grep -qxF "$line" <(tr -d '\r' <"$log") || { log "missing from the redirected log: '$line'"; missing=1; }
done
if [ $missing != 0 ]; then
	log "the log as written:"
	sed 's/^/  | /' "$log" >&2
	exit 1
fi
log "a redirected log keeps the host's and the guest's output ($(wc -l <"$log") lines)"
