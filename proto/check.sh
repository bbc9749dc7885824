#!/usr/bin/env bash
# proto/check.sh: everything `make check` runs for the protocol core.
#
#   1. cargo test (unit, integration, property tests) + clippy + rustdoc, all -D warnings
#   2. source rules the kernel build relies on (no float, no `crate::`, no unsafe)
#   3. oracle (a): Linux's IBA field macros, compiled from KDIR's headers in a host C program
#   4. oracle (b): Wireshark's InfiniBand dissector (tshark) on RoCEv2 frames we encode
#   5. a bounded fuzz run of both fuzz targets
#
# Environment:
#   KDIR                Linux 7.3 source (default: the tree named in $CEPM_CACHE/current-kernel)
#   CEPM_CACHE          default ${XDG_CACHE_HOME:-$HOME/.cache}/cepm
#   CEPM_FUZZ_SECONDS   seconds per fuzz target (default 30)
#   CEPM_FUZZ_JOBS      parallel fuzz workers per target (default 1)
# Exits non-zero on the first failure. Writes only under <repo>/target/.
set -euo pipefail

proto=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$proto/.." && pwd)
target=$root/target
CEPM_CACHE=${CEPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cepm}
fuzz_seconds=${CEPM_FUZZ_SECONDS:-30}
fuzz_jobs=${CEPM_FUZZ_JOBS:-1}
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\n==> [proto] %s\n' "$*"; }
fail() { printf '[proto] FAILED: %b\n' "$*" >&2; exit 1; }
# Source lines of proto/src without comment lines.
code_lines() { grep -nE "$1" "$proto"/src/*.rs | grep -vE '^[^:]+:[0-9]+:\s*//' || true; }
run() { printf '+ %s\n' "$*"; nice -n 19 "$@"; }

cargo_proto=(cargo --quiet)
manifest=(--manifest-path "$proto/Cargo.toml")

step "cargo test (cepm-proto)"
# Unit + integration tests (the crate has no doc tests; examples are built below, the
# micro-benchmark in benches/ is a plain binary and is not run).
run "${cargo_proto[@]}" test "${manifest[@]}" --lib --tests

step "cargo clippy --all-targets -D warnings"
run "${cargo_proto[@]}" clippy "${manifest[@]}" --all-targets -- -D warnings

step "rustdoc -D warnings"
RUSTDOCFLAGS="-D warnings" run "${cargo_proto[@]}" doc "${manifest[@]}" --no-deps

step "kernel source rules (proto/src: no float, no crate:: paths, no unsafe, lib.rs only mod lines)"
bad=$(code_lines '\bf(32|64)\b|\b[0-9]+\.[0-9]+')
[ -z "$bad" ] || fail "floating point in proto/src:\n$bad"
bad=$(code_lines '\bcrate::')
[ -z "$bad" ] || fail "crate:: path in proto/src (use super::):\n$bad"
bad=$(code_lines '\bunsafe\b' | grep -v 'forbid(unsafe_code)' || true)
[ -z "$bad" ] || fail "unsafe in proto/src:\n$bad"
bad=$(grep -vE '^(//!.*|#!\[(no_std|forbid\(unsafe_code\))\]|pub mod [a-z_]+;|)$' "$proto/src/lib.rs" || true)
[ -z "$bad" ] || fail "lib.rs may hold only docs, the two crate attributes and pub mod lines:\n$bad"
for f in "$proto"/src/*.rs; do
	m=$(basename "$f" .rs)
	[ "$m" = lib ] || grep -qx "pub mod $m;" "$proto/src/lib.rs" || fail "src/$m.rs is not listed in lib.rs"
	[ "$m" = lib ] || ! grep -qE '^#!\[' "$f" || fail "src/$m.rs has a crate-level attribute"
done
echo "ok"

step "kernel mount: proto/src as a submodule of a no_std rlib, with the kernel's rustc/clippy flags"
# What Kbuild does to rust/*.rs (Linux 7.3 Makefile rust_common_flags + KBUILD_RUSTFLAGS),
# minus the kernel crate; -Dwarnings as the module build uses.
kmount=$target/kmount
mkdir -p "$kmount"
{
	echo '//! Simulated cepm.ko crate root: mounts proto/src the way the kernel module does.'
	echo '#![no_std]'
	echo '/// The protocol core.'
	echo "#[path = \"$proto/src\"]"
	echo 'pub mod proto {'
	grep -E '^pub mod [a-z_]+;$' "$proto/src/lib.rs"
	echo '}'
} > "$kmount/lib.rs"
kflags=(--edition=2021 --crate-type rlib --crate-name cepm_kmount -Cpanic=abort -Coverflow-checks=on
	-Copt-level=2 -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn -Wmissing_docs -Wrust_2018_idioms
	-Wunreachable_pub -Wclippy::all -Wclippy::as_ptr_cast_mut -Wclippy::as_underscore
	-Wclippy::cast_lossless -Aclippy::collapsible_if -Aclippy::collapsible_match
	-Wclippy::ignored_unit_patterns -Aclippy::incompatible_msrv -Wclippy::mut_mut
	-Wclippy::needless_bitwise_bool -Aclippy::needless_lifetimes -Wclippy::no_mangle_with_rust_abi
	-Wclippy::ptr_as_ptr -Wclippy::ptr_cast_constness -Wclippy::ref_as_ptr
	-Wclippy::undocumented_unsafe_blocks -Aclippy::uninlined_format_args
	-Wclippy::unnecessary_safety_comment -Wclippy::unnecessary_safety_doc -Aclippy::unwrap_or_default
	-Wrustdoc::missing_crate_level_docs -Wrustdoc::unescaped_backticks -Wclippy::float_arithmetic
	-Wdead_code -Dwarnings)
run clippy-driver "${kflags[@]}" --emit=obj -o "$kmount/cepm_kmount.o" "$kmount/lib.rs"
echo "ok"

# Both oracles run even if the first fails, so one report shows everything.
oracle_failures=0

step "oracle (a): Linux IBA field macros"
if [ -z "${KDIR:-}" ]; then
	[ -r "$CEPM_CACHE/current-kernel" ] || fail "no KDIR and no $CEPM_CACHE/current-kernel (run make kernel, or set KDIR)"
	KDIR=$(cat "$CEPM_CACHE/current-kernel")
fi
echo "KDIR=$KDIR"
run "$proto/oracle/build-iba-oracle.sh" "$KDIR" "$target/oracle"
run "${cargo_proto[@]}" run "${manifest[@]}" --example oracle -- iba "$target/oracle/iba-oracle" 64 ||
	oracle_failures=$((oracle_failures + 1))

step "oracle (b): tshark dissecting our RoCEv2 frames"
command -v tshark >/dev/null || fail "tshark not found (make deps installs it)"
tshark --version | head -1
run "${cargo_proto[@]}" run "${manifest[@]}" --example oracle -- tshark 32 "$target/oracle/cepm-cm.pcap" ||
	oracle_failures=$((oracle_failures + 1))
[ "$oracle_failures" = 0 ] || fail "$oracle_failures oracle(s) disagree with our encoding"

step "fuzz: decode + state, ${fuzz_seconds}s each"
host=$(rustc -vV | sed -n 's/^host: //p')
fuzz_target=$target/fuzz
# The flags cargo-fuzz uses for libFuzzer coverage; --target keeps them off build scripts.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
CARGO_TARGET_DIR=$fuzz_target run cargo --quiet build --release --bins --target "$host" \
	--manifest-path "$proto/fuzz/Cargo.toml"
unset RUSTFLAGS
# A run leaves nothing in the repository: a stamp to find what it wrote in $root afterwards.
mkdir -p "$fuzz_target/run"
stamp=$fuzz_target/run/.started
touch "$stamp"
# The two targets run side by side, each for its full time: the same fuzzing, half the wall
# time on a machine with two cores.
fuzz_one() {
	local t=$1 work=$fuzz_target/run/$1
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	# New inputs go to the scratch corpus (first dir); the committed corpus is read only. In
	# $work, where -jobs makes libFuzzer write each worker's fuzz-N.log.
	(cd "$work" && run "$fuzz_target/$host/release/$t" -max_total_time="$fuzz_seconds" \
		-jobs="$fuzz_jobs" -workers="$fuzz_jobs" -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" "$proto/fuzz/corpus/$t" \
		>"$work/log" 2>&1)
}
declare -A fuzz_pid
for t in decode state; do
	fuzz_one "$t" &
	fuzz_pid[$t]=$!
done
for t in decode state; do
	work=$fuzz_target/run/$t
	wait "${fuzz_pid[$t]}" || { tail -40 "$work/log"; fail "fuzz target $t crashed: see $work/artifacts"; }
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)' "$work/log" "$work"/fuzz-*.log 2>/dev/null | sed "s|^|$t: |" || true
	[ -z "$(ls -A "$work/artifacts")" ] || fail "fuzz target $t left artifacts in $work/artifacts"
done
left=$(find "$root" -maxdepth 1 -name 'fuzz-*.log' -newer "$stamp")
[ -z "$left" ] || fail "the fuzz run left its workers' logs in the repository: $left"


step "proto: all checks passed"
