// SPDX-License-Identifier: GPL-2.0
/*
 * Oracle for cepm's CM codec built from Linux's own field macros.
 *
 * stdin, one command per line (numbers and bytes in hex):
 *   case                         start a message: zeroed 256-byte MAD
 *   hdr B C V M ST CS TID A R AM  MAD header fields (struct ib_mad_hdr)
 *   set NAME VALUE               IBA_SET(NAME, mad, VALUE)
 *   mem NAME BYTES               copy BYTES to NAME's offset (IBA_GET_MEM_PTR)
 *   wire BYTES                   cepm's encoding of the same message
 *   end                          print "built <Linux's 256 bytes>", then for every
 *                                set/mem field "got NAME <value read from cepm's bytes>"
 * "--list" prints every field name this oracle knows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <linux/kernel.h>

union ib_gid {
	u8 raw[16];
	struct {
		__be64 subnet_prefix;
		__be64 interface_id;
	} global;
};

#include "linux_ib_mad_extract.h"
#include <rdma/ibta_vol1_c12.h>

#define MAD_SIZE 256
#define HDR_SIZE ((int)sizeof(struct ib_mad_hdr))

struct field {
	const char *name;
	int is_mem;
	void (*set)(void *mad, u64 v);
	u64 (*get)(const void *mad);
	size_t off, len;
};

/*
 * One setter/getter per scalar CM field, through IBA_SET/IBA_GET's bodies. (The argument
 * is expanded before substitution, so the underscore forms receive the field's 4 parts.)
 */
#define F(n)                                                          \
	static void set_##n(void *mad, u64 v) { _IBA_SET(n, mad, v); } \
	static u64 get_##n(const void *mad) { return _IBA_GET(n, mad); }
#define M(n)
#include "cm_fields.h"
#undef F
#undef M

/*
 * ClassPortInfo has no IBA macros: member offsets come from Linux's struct and the
 * capmask2/resp_time helpers from ib_mad.h; the tc/sl/fl and hl/qp packings follow IBTA
 * vol. 1 table 126 (written here, the one hand-made part of this oracle).
 */
static struct ib_class_port_info *cpi(void *mad) { return (void *)((u8 *)mad + HDR_SIZE); }
static const struct ib_class_port_info *ccpi(const void *mad) { return (const void *)((const u8 *)mad + HDR_SIZE); }
#define CPI_U8(n, m)                                                                \
	static void set_##n(void *mad, u64 v) { cpi(mad)->m = v; }                  \
	static u64 get_##n(const void *mad) { return ccpi(mad)->m; }
#define CPI_BE(n, m, bits, shift, width)                                                       \
	static void set_##n(void *mad, u64 v)                                                  \
	{                                                                                      \
		u##bits mask = (u##bits)(((1ULL << (width)) - 1) << (shift));                  \
		u##bits cur = be##bits##toh(cpi(mad)->m);                                      \
		cpi(mad)->m = htobe##bits((cur & ~mask) | (((u##bits)v << (shift)) & mask));   \
	}                                                                                      \
	static u64 get_##n(const void *mad)                                                    \
	{                                                                                      \
		return (be##bits##toh(ccpi(mad)->m) >> (shift)) & ((1ULL << (width)) - 1);    \
	}
CPI_U8(CPI_BASE_VERSION, base_version)
CPI_U8(CPI_CLASS_VERSION, class_version)
CPI_BE(CPI_CAPABILITY_MASK, capability_mask, 16, 0, 16)
static void set_CPI_CAP_MASK2(void *mad, u64 v) { ib_set_cpi_capmask2(cpi(mad), v); }
static u64 get_CPI_CAP_MASK2(const void *mad) { return ib_get_cpi_capmask2((void *)ccpi(mad)); }
static void set_CPI_RESP_TIME(void *mad, u64 v) { ib_set_cpi_resp_time(cpi(mad), v); }
static u64 get_CPI_RESP_TIME(const void *mad) { return ib_get_cpi_resp_time((void *)ccpi(mad)); }
CPI_BE(CPI_REDIRECT_TC, redirect_tcslfl, 32, 24, 8)
CPI_BE(CPI_REDIRECT_SL, redirect_tcslfl, 32, 20, 4)
CPI_BE(CPI_REDIRECT_FL, redirect_tcslfl, 32, 0, 20)
CPI_BE(CPI_REDIRECT_LID, redirect_lid, 16, 0, 16)
CPI_BE(CPI_REDIRECT_PKEY, redirect_pkey, 16, 0, 16)
CPI_BE(CPI_REDIRECT_QP, redirect_qp, 32, 0, 24)
CPI_BE(CPI_REDIRECT_QKEY, redirect_qkey, 32, 0, 32)
CPI_BE(CPI_TRAP_TC, trap_tcslfl, 32, 24, 8)
CPI_BE(CPI_TRAP_SL, trap_tcslfl, 32, 20, 4)
CPI_BE(CPI_TRAP_FL, trap_tcslfl, 32, 0, 20)
CPI_BE(CPI_TRAP_LID, trap_lid, 16, 0, 16)
CPI_BE(CPI_TRAP_PKEY, trap_pkey, 16, 0, 16)
CPI_BE(CPI_TRAP_HL, trap_hlqp, 32, 24, 8)
CPI_BE(CPI_TRAP_QP, trap_hlqp, 32, 0, 24)
CPI_BE(CPI_TRAP_QKEY, trap_qkey, 32, 0, 32)

#define MEM_OFF(s, off, type, bits) (off)
#define MEM_LEN(s, off, type, bits) ((bits) / 8)
#define F(n) { #n, 0, set_##n, get_##n, 0, 0 },
#define M(n) { #n, 1, NULL, NULL, MEM_OFF(n), MEM_LEN(n) },
#define C(n) { #n, 0, set_##n, get_##n, 0, 0 },
#define CPI_MEM(n, m) { #n, 1, NULL, NULL, HDR_SIZE + __builtin_offsetof(struct ib_class_port_info, m), 16 },
static const struct field fields[] = {
#include "cm_fields.h"
	C(CPI_BASE_VERSION) C(CPI_CLASS_VERSION) C(CPI_CAPABILITY_MASK) C(CPI_CAP_MASK2)
	C(CPI_RESP_TIME) CPI_MEM(CPI_REDIRECT_GID, redirect_gid) C(CPI_REDIRECT_TC)
	C(CPI_REDIRECT_SL) C(CPI_REDIRECT_FL) C(CPI_REDIRECT_LID) C(CPI_REDIRECT_PKEY)
	C(CPI_REDIRECT_QP) C(CPI_REDIRECT_QKEY) CPI_MEM(CPI_TRAP_GID, trap_gid) C(CPI_TRAP_TC)
	C(CPI_TRAP_SL) C(CPI_TRAP_FL) C(CPI_TRAP_LID) C(CPI_TRAP_PKEY) C(CPI_TRAP_HL)
	C(CPI_TRAP_QP) C(CPI_TRAP_QKEY)
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "iba-oracle: %s %s\n", what, arg ? arg : "");
	exit(2);
}

static const struct field *lookup(const char *name)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	die("unknown field", name);
	return NULL;
}

static size_t unhex(const char *s, u8 *out, size_t max)
{
	size_t n = strlen(s) / 2;
	if (n > max || strlen(s) % 2)
		die("bad hex", s);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			die("bad hex", s);
		out[i] = v;
	}
	return n;
}

static void puthex(const u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

int main(int argc, char **argv)
{
	static char line[4096];
	u8 mad[MAD_SIZE], wire[MAD_SIZE];
	const struct field *used[256];
	size_t nused = 0;

	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < NFIELDS; i++)
			printf("%s\n", fields[i].name);
		return 0;
	}
	if (sizeof(struct ib_mad_hdr) != 24 || sizeof(struct ib_class_port_info) != 72)
		die("unexpected struct sizes", NULL);

	while (fgets(line, sizeof(line), stdin)) {
		char cmd[16], name[128], arg[1024];
		line[strcspn(line, "\n")] = 0;
		int n = sscanf(line, "%15s %127s %1023s", cmd, name, arg);
		if (n < 1)
			continue;
		if (!strcmp(cmd, "case")) {
			memset(mad, 0, sizeof(mad));
			memset(wire, 0, sizeof(wire));
			nused = 0;
		} else if (!strcmp(cmd, "hdr")) {
			unsigned long long v[10];
			struct ib_mad_hdr *h = (void *)mad;
			if (sscanf(line, "hdr %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1],
				   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) != 10)
				die("bad hdr", line);
			h->base_version = v[0];
			h->mgmt_class = v[1];
			h->class_version = v[2];
			h->method = v[3];
			h->status = cpu_to_be16(v[4]);
			h->class_specific = cpu_to_be16(v[5]);
			h->tid = cpu_to_be64(v[6]);
			h->attr_id = cpu_to_be16(v[7]);
			h->resv = cpu_to_be16(v[8]);
			h->attr_mod = cpu_to_be32(v[9]);
		} else if (!strcmp(cmd, "set") && n == 3) {
			const struct field *f = lookup(name);
			if (f->is_mem)
				die("set on byte field", name);
			f->set(mad, strtoull(arg, NULL, 16));
			used[nused++] = f;
		} else if (!strcmp(cmd, "mem") && n == 3) {
			const struct field *f = lookup(name);
			u8 buf[MAD_SIZE];
			size_t len = unhex(arg, buf, sizeof(buf));
			if (!f->is_mem || len > f->len || f->off + len > MAD_SIZE)
				die("bad mem field", name);
			memcpy(mad + f->off, buf, len);
			used[nused++] = f;
		} else if (!strcmp(cmd, "wire")) {
			if (unhex(line + 5, wire, sizeof(wire)) != MAD_SIZE)
				die("wire must be 256 bytes", NULL);
		} else if (!strcmp(cmd, "end")) {
			printf("built ");
			puthex(mad, MAD_SIZE);
			printf("\n");
			for (size_t i = 0; i < nused; i++) {
				const struct field *f = used[i];
				if (f->is_mem) {
					printf("got %s ", f->name);
					puthex(wire + f->off, f->len);
					printf("\n");
				} else {
					printf("got %s %llx\n", f->name, (unsigned long long)f->get(wire));
				}
			}
			printf("done\n");
		} else {
			die("bad command", line);
		}
		if (nused >= sizeof(used) / sizeof(used[0]))
			die("too many fields", NULL);
	}
	return 0;
}
