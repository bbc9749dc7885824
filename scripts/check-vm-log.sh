#!/usr/bin/env bash
# A log redirected to a file keeps everything: what the host printed before the guest booted,
# the guest's own output, and what came after.  (QEMU opens the console's path; handed
# /proc/self/fd/1 of a regular file, it truncates the file.)  One quick boot, no guest setup.
set -euo pipefail
CEPM_LOG_TAG=vm-log
. "$(dirname "$0")/common.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
{
	echo "host: before the guest"
	echo "host: stderr before the guest" >&2
	CEPM_VM_NO_SETUP=1 "$CEPM_ROOT/scripts/vm" -- sh -c 'echo "guest: stdout"; echo "guest: stderr" >&2'
	echo "host: after the guest"
} >"$log" 2>&1
missing=0
for line in "host: before the guest" "host: stderr before the guest" "guest: stdout" "guest: stderr" \
	"host: after the guest"; do
	grep -qxF "$line" <(tr -d '\r' <"$log") || { log "missing from the redirected log: '$line'"; missing=1; }
done
if [ $missing != 0 ]; then
	log "the log as written:"
	sed 's/^/  | /' "$log" >&2
	exit 1
fi
log "a redirected log keeps the host's and the guest's output ($(wc -l <"$log") lines)"
