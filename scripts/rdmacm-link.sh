#!/usr/bin/env bash
# Links cepm's librdmacm.so.1 (out/rdmacm/) from the cepm-rdmacm crate's static library, with
# librdmacm's symbol versions (rdmacm/librdmacm.map). Not a cdylib: rustc hands the linker a
# version script of its own for every cdylib, and GNU ld takes one only (docs/rdmacm.md).
set -euo pipefail
CEPM_LOG_TAG=rdmacm
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"
out=out/rdmacm
mkdir -p "$out"
${CARGO:-cargo} build --release -p cepm-rdmacm
# --whole-archive: nothing refers to the exported functions yet, so without it the linker
# would take none of them; --gc-sections then drops what they do not reach.
# Linked beside and renamed into place: make check's host tests run this again while the
# guest's tests load the library, and a reader must see the old file or the new, whole.
trap 'rm -f "$out/.librdmacm.so.1.$$"' EXIT
${CC:-cc} -shared -o "$out/.librdmacm.so.1.$$" \
	-Wl,--whole-archive target/release/librdmacm_cepm.a -Wl,--no-whole-archive \
	-Wl,--version-script=rdmacm/librdmacm.map -Wl,-soname,librdmacm.so.1 \
	-Wl,--gc-sections -Wl,-z,defs -libverbs -lgcc_s -lpthread -ldl -lm -lc
mv -f "$out/.librdmacm.so.1.$$" "$out/librdmacm.so.1"
[ "$(readlink "$out/librdmacm.so")" = librdmacm.so.1 ] || ln -sf librdmacm.so.1 "$out/librdmacm.so"
log "$out/librdmacm.so.1: $(objdump -T "$out/librdmacm.so.1" | grep -c ' RDMACM_1\.[0-3] ') versioned symbols"
