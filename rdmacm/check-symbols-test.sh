#!/usr/bin/env bash
# check-symbols.sh must not depend on how fast ldconfig writes. Its lookup once stopped reading
# ldconfig's output at the first match, and under pipefail the writer's SIGPIPE (exit 141)
# failed CI at random. Here a stub ldconfig names the system library first and then keeps
# writing, which makes that SIGPIPE certain.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
real=$(ldconfig -p | awk '$1 == "librdmacm.so.1" && !found++ { print $NF }')
[ -n "$real" ] || { echo "check-symbols-test: no system librdmacm.so.1" >&2; exit 1; }
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
cat >"$stub/ldconfig" <<STUB
#!/bin/sh
echo "	librdmacm.so.1 (libc6,x86-64) => $real"
yes "	libfiller.so.1 (libc6,x86-64) => /nonexistent/libfiller.so.1" | head -n 200000
STUB
chmod +x "$stub/ldconfig"
rc=0
PATH="$stub:$PATH" "$here/check-symbols.sh" "$@" || rc=$?
[ $rc = 0 ] || { echo "check-symbols-test: check-symbols.sh exited $rc with a long ldconfig listing" >&2; exit 1; }
echo "check-symbols-test: ok with a ldconfig that writes 200,000 lines after the match"
