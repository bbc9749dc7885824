#!/usr/bin/env bash
# Builds the Linux-IBA-macro oracle: a tiny host C program that includes the kernel's own
# include/rdma/iba.h and include/rdma/ibta_vol1_c12.h (copied from KDIR, never edited),
# plus struct ib_mad_hdr / struct ib_class_port_info and the ClassPortInfo helpers cut out
# of include/rdma/ib_mad.h. The list of fields is generated from ibta_vol1_c12.h too, so
# nothing about the layout is hand-copied for the 11 CM messages.
#
# usage: build-iba-oracle.sh KDIR OUTDIR      -> OUTDIR/iba-oracle
set -euo pipefail
kdir=${1:?usage: $0 KDIR OUTDIR}
out=${2:?usage: $0 KDIR OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)

for f in include/rdma/iba.h include/rdma/ibta_vol1_c12.h include/rdma/ib_mad.h; do
	[ -r "$kdir/$f" ] || { echo "build-iba-oracle: $kdir/$f missing" >&2; exit 1; }
done

inc=$out/include
rm -rf "$inc"
mkdir -p "$inc/linux" "$inc/rdma"
cp "$kdir/include/rdma/iba.h" "$kdir/include/rdma/ibta_vol1_c12.h" "$inc/rdma/"

# Userspace stand-ins for the three kernel headers iba.h includes.
cat > "$inc/linux/kernel.h" <<'H'
#include <endian.h>
#include <stdint.h>
#include <string.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
#define be16_to_cpu(x) be16toh(x)
#define be32_to_cpu(x) be32toh(x)
#define be64_to_cpu(x) be64toh(x)
#define cpu_to_be16(x) htobe16(x)
#define cpu_to_be32(x) htobe32(x)
#define cpu_to_be64(x) htobe64(x)
#define GENMASK(h, l) ((~0U << (l)) & (~0U >> (31 - (h))))
#define GENMASK_ULL(h, l) ((~0ULL << (l)) & (~0ULL >> (63 - (h))))
#define BUILD_BUG_ON(x)
#define BUILD_BUG_ON_ZERO(x) 0
#define WARN_ON(x) (x)
H
cat > "$inc/linux/bitfield.h" <<'H'
#define FIELD_PREP(mask, val) ((((__typeof__(mask))(val)) << (__builtin_ffsll(mask) - 1)) & (mask))
#define FIELD_GET(mask, reg) (((reg) & (mask)) >> (__builtin_ffsll(mask) - 1))
H
cat > "$inc/linux/unaligned.h" <<'H'
#define get_unaligned(p) ({ __typeof__(+*(p)) _v; memcpy(&_v, (p), sizeof(_v)); _v; })
#define put_unaligned(v, p) do { __typeof__(*(p)) _v = (v); memcpy((p), &_v, sizeof(_v)); } while (0)
H

# Cut the MAD header, ClassPortInfo and its helpers out of ib_mad.h.
mad=$kdir/include/rdma/ib_mad.h
{
	grep -E '^#define IB_CLASS_PORT_INFO_RESP_TIME_(MASK|FIELD_SIZE)' "$mad"
	awk '/^struct ib_mad_hdr \{/,/^\};/' "$mad"
	awk '/^struct ib_class_port_info \{/,/^\};/' "$mad"
	awk '/^static inline .*ib_(get|set)_cpi_(resp_time|capmask2)\(/,/^\}/' "$mad"
} > "$inc/linux_ib_mad_extract.h"
grep -q 'struct ib_mad_hdr {' "$inc/linux_ib_mad_extract.h"
grep -q 'struct ib_class_port_info {' "$inc/linux_ib_mad_extract.h"
[ "$(grep -c '^static inline' "$inc/linux_ib_mad_extract.h")" = 4 ]

# X-macro list of every CM_* field macro: F(name) for scalars, M(name) for byte arrays.
awk '{ while (/\\$/) { sub(/\\$/, ""); if ((getline nxt) > 0) $0 = $0 nxt } }
     /^#define CM_[A-Z0-9_]+[ \t]+CM_FIELD/ { print ($0 ~ /CM_FIELD_MLOC/ ? "M" : "F") "(" $2 ")" }' \
	"$kdir/include/rdma/ibta_vol1_c12.h" > "$inc/cm_fields.h"
[ "$(wc -l < "$inc/cm_fields.h")" -ge 100 ]

${CC:-gcc} -O1 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -I"$inc" \
	"$here/iba_oracle.c" -o "$out/iba-oracle"
