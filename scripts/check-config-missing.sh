#!/usr/bin/env bash
# config_missing (scripts/common.sh), which tells make kernel and the KASAN lane whether their
# config fragment survived Kconfig, compares whole lines as text: a value may hold '*' or '.'
# (CONFIG_CMDLINE="slub_debug=FZP,kmalloc-*"), which must neither fail a config that holds it
# nor pass one that holds something else.
set -euo pipefail
CEPM_LOG_TAG=config-missing
. "$(dirname "$0")/common.sh"

config=$(mktemp)
trap 'rm -f "$config"' EXIT
cat >"$config" <<'CONFIG'
CONFIG_RUST=y
CONFIG_CMDLINE="slub_debug=FZP,kmalloc-*"
CONFIG_HZ=100
# CONFIG_UNWINDER_ORC is not set
CONFIG_UNWINDER_FRAME_POINTER=y
CONFIG
failed=0
expect() {
	local want=$1 got
	shift
	got=$(config_missing "$config" "$@")
	[ "$got" = "$want" ] || { log "config_missing $*: printed '$got', not '$want'"; failed=1; }
}
expect "" CONFIG_RUST=y 'CONFIG_CMDLINE="slub_debug=FZP,kmalloc-*"' "# CONFIG_UNWINDER_ORC is not set"
expect "CONFIG_RDMA_RXE=m" CONFIG_RUST=y CONFIG_RDMA_RXE=m
expect "# CONFIG_UNWINDER_FRAME_POINTER is not set" "# CONFIG_UNWINDER_FRAME_POINTER is not set"
# Read as patterns, these would match lines that differ from them.
expect 'CONFIG_CMDLINE="slub_debug=FZP,kmalloc-"' 'CONFIG_CMDLINE="slub_debug=FZP,kmalloc-"'
expect "CONFIG_HZ=1.0" CONFIG_HZ=1.0
expect "CONFIG_RUST=." CONFIG_RUST=.
[ $failed = 0 ] || exit 1
log "fragment lines are compared as text"
