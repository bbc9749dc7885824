#!/usr/bin/env bash
# Host test of scripts/check-docs.sh: in a small tree of its own, a doc whose citations all
# hold passes, and a doc that cites what is not there fails with each citation named.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree"/{docs,rust,scripts,selftests/cepm,include/uapi,cepm/src}
touch "$tree"/rust/cep.rs "$tree"/rust/cepm_bindings.rs "$tree"/scripts/vm \
	"$tree"/selftests/cepm/lib.sh "$tree"/selftests/run.sh "$tree"/include/uapi/cepm.h \
	"$tree"/docs/abi.md "$tree"/cepm/src/lib.rs "$tree"/Kbuild
printf '/out/\n/rust/*_bindings.rs\n' >"$tree/.gitignore"
git -C "$tree" init -q

cat >"$tree/README.md" <<'EOF'
# A tree
See [the ABI](docs/abi.md#privileges), [upstream](https://example.org/x.md),
[mail](mailto:someone@example.org) and [below](#a-tree). [The ABI again][abi].

[abi]: docs/abi.md
EOF
cat >"$tree/docs/good.md" <<'EOF'
Back to [the README](../README.md) and [the ABI](abi.md), [the tree](/rust/cep.rs).
Ours: `rust/cep.rs`, `rust/cep.rs:Cep::run`, `rust/cep.rs (Cep::run)`, `./scripts/vm`,
`include/uapi/cepm.h`, `selftests/cepm/`, `rust/`, `selftests/cepm/lib.sh@two-hosts`.
Not ours: `include/rdma/ib_cm.h`, `include/uapi/rdma/rdma_user_cm.h`, `rust/kernel/sync/poll.rs`,
`drivers/infiniband/core/cm.c`, `librdmacm/cma.c`, `scripts/checkpatch.pl`, `src/get_clock.c`.
Ours too: `cepm/src/lib.rs`, `Kbuild`, a command `scripts/vm -- selftests/run.sh --list`.
Not paths: `selftests/cepm/*.sh`, `rust/<file>.rs`, `rust/{a,b}.rs`, `scripts/…`,
`$KDIR/rust/x.rs`, `insmod cepm.ko devices=rxe0`.
What commands write: `out/bench.md`, `out/rdmacm/librdmacm.so.1`, `LD_LIBRARY_PATH=out/rdmacm`,
`out/selftest-N.log`, and out/check-selftest.log in the prose.
```sh
scripts/vm -- selftests/run.sh cep_connect.sh@two-hosts   # (rust/cep.rs) out/bench.md
insmod out/kbuild/linux/cepm.ko; cat /proc/net/dev; see drivers/infiniband/core/cm.c
```
EOF
out=$(bash "$here/check-docs.sh" "$tree" 2>&1) || {
	echo "not ok 1: a doc whose citations all hold fails:"
	printf '%s\n' "$out" | sed 's/^/  | /'
	exit 1
}
echo "ok 1: a doc whose citations all hold passes"

cat >"$tree/docs/bad.md" <<'EOF'
A [broken link](missing.md), [another](../rust/gone.rs#frag) and [a third][r].
Out of the tree: [up](../../x.md).
Gone: `rust/gone.rs`, `rust/gone.rs:func`, `scripts/gone.sh (main)`, `include/uapi/cepm2.h`.
A stored log: `out/run3-check.log`, by a command `scripts/vm -- out/exp/probe.sh`,
and in the prose (out/notes-3.md).
Built, ignored by git: `rust/cepm_bindings.rs`.
In the new crate: `cepm/src/gone.rs`; top level: `Makefile`; a command: `scripts/gone.sh --flag`.

[r]: nowhere.md

```sh
scripts/vm -- selftests/gone.sh          # in a fenced block
insmod out/run43/cepm.ko
```
EOF
want='docs/bad.md:1: missing docs/missing.md
docs/bad.md:1: missing rust/gone.rs
docs/bad.md:2: missing ../../x.md
docs/bad.md:3: missing include/uapi/cepm2.h
docs/bad.md:3: missing rust/gone.rs
docs/bad.md:3: missing rust/gone.rs
docs/bad.md:3: missing scripts/gone.sh
docs/bad.md:4: missing out/exp/probe.sh
docs/bad.md:4: missing out/run3-check.log
docs/bad.md:5: missing out/notes-3.md
docs/bad.md:12: missing selftests/gone.sh
docs/bad.md:13: missing out/run43/cepm.ko
docs/bad.md:6: missing rust/cepm_bindings.rs
docs/bad.md:7: missing Makefile
docs/bad.md:7: missing cepm/src/gone.rs
docs/bad.md:7: missing scripts/gone.sh
docs/bad.md:9: missing docs/nowhere.md'
rc=0
got=$(bash "$here/check-docs.sh" "$tree" 2>/dev/null) || rc=$?
got=$(printf '%s\n' "$got" | LC_ALL=C sort)
want=$(printf '%s\n' "$want" | LC_ALL=C sort)
if [ "$rc" = 1 ] && [ "$got" = "$want" ]; then
	echo "ok 2: a doc citing what is not there fails, each citation named"
else
	echo "not ok 2: exit $rc (want 1); printed, then wanted:"
	printf '%s\n' "$got" | sed 's/^/  got  | /'
	printf '%s\n' "$want" | sed 's/^/  want | /'
	exit 1
fi
echo "check-docs-test: 2 of 2 passed"
