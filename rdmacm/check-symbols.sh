#!/usr/bin/env bash
# cepm's librdmacm.so.1 exports exactly what the system's librdmacm.so.1 (rdma-core 44) does,
# each symbol at the same version, plus the RDMACM_1.4 node of later rdma-core versions
# ($LATER), and nothing else: an application linked against either finds every symbol it
# recorded. Run by make host-test, after scripts/rdmacm-link.sh.
set -euo pipefail
ours=${1:-out/rdmacm/librdmacm.so.1}
system=${2:-$(ldconfig -p | awk '$1 == "librdmacm.so.1" && !found++ { print $NF }')}
[ -f "$ours" ] || { echo "check-symbols: $ours is missing: scripts/rdmacm-link.sh" >&2; exit 1; }
[ -f "$system" ] || { echo "check-symbols: no system librdmacm.so.1 (librdmacm1)" >&2; exit 1; }

# "VERSION NAME" for every symbol the library defines, version definitions left out.
versioned() { objdump -T "$1" | awk 'NF >= 3 && !/\*UND\*/ && $(NF-1) ~ /^RDMACM_/ && $NF !~ /^RDMACM_/ { print $(NF-1), $NF }' | sort -u; }
# Every defined dynamic symbol without an RDMACM version: ours must have none.
unversioned() { objdump -T "$1" | awk 'NF >= 3 && /^[0-9a-f]+ / && !/\*UND\*/ && $(NF-1) !~ /^RDMACM_/ { print $NF }'; }

# What later librdmacm versions export and the system's may not have yet.
LATER='RDMACM_1.4 rdma_query_addrinfo
RDMACM_1.4 rdma_resolve_addrinfo
RDMACM_1.4 rdma_write_cm_event'

rc=0
count=$(versioned "$system" | wc -l)
[ "$count" -gt 0 ] || { echo "check-symbols: read no versioned symbol from $system" >&2; exit 1; }
if ! diff <({ versioned "$system"; echo "$LATER"; } | sort -u) <(versioned "$ours") >/tmp/check-symbols.$$; then
	echo "check-symbols: $ours differs from $system ('<' only the system's, '>' only ours):" >&2
	cat /tmp/check-symbols.$$ >&2
	rc=1
fi
rm -f /tmp/check-symbols.$$
leaked=$(unversioned "$ours")
if [ -n "$leaked" ]; then
	echo "check-symbols: $ours also exports: $leaked" >&2
	rc=1
fi
soname=$(objdump -p "$ours" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = librdmacm.so.1 ] || { echo "check-symbols: SONAME is '$soname'" >&2; rc=1; }
[ $rc != 0 ] || echo "check-symbols: $(versioned "$ours" | wc -l) symbols, each at the version of $system; nothing else exported; SONAME $soname"
exit $rc
