# Shared settings for cepm's scripts. Source it; do not run it.
# Everything expensive lives under CEPM_CACHE, outside the repository.

CEPM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CEPM_CACHE=${CEPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cepm}

# Pinned tool versions.  Changing one changes the kernel cache key too.
CEPM_LINUX_SERIES=7.3
CEPM_BINDGEN_VERSION=0.73.2
CEPM_VIRTME_NG_VERSION=1.42
CEPM_LIBCLANG_VERSION=18.1.1
# The test VM's root filesystem server (not a kernel input).
CEPM_VIRTIOFSD_VERSION=1.14.0

CEPM_TOOLS=$CEPM_CACHE/tools                 # cargo install --root
CEPM_VENV=$CEPM_CACHE/venv                   # virtme-ng + PyPI libclang

export PATH="$CEPM_TOOLS/bin:$CEPM_VENV/bin:$HOME/.cargo/bin:$PATH"
# PyPI's libclang wheel ships libclang.so here; bindgen finds it through LIBCLANG_PATH.
for _d in "$CEPM_VENV"/lib/python3*/site-packages/clang/native; do
	[ -d "$_d" ] && export LIBCLANG_PATH=$_d
done
unset _d

# The pinned virtiofsd is on PATH (make deps builds it into CEPM_TOOLS): vng then serves the
# test VM's root over virtio-fs instead of 9p.
virtiofsd_present() {
	[ "$("$CEPM_TOOLS/bin/virtiofsd" --version 2>/dev/null | awk '{print $2}')" = "$CEPM_VIRTIOFSD_VERSION" ]
}

# config_missing CONFIG LINE...: prints each LINE of a config fragment (CONFIG_X=VALUE, or
# "# CONFIG_X is not set") that the .config file CONFIG does not hold after Kconfig resolved it.
# Compared as text: a value may hold '*' or '.', which grep would take as a pattern.
config_missing() {
	local config=$1 line opt
	shift
	for line; do
		case $line in
		CONFIG_*=*) grep -qxF -- "$line" "$config" || printf '%s\n' "$line" ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# } opt=${opt%% *}
			! grep -q "^$opt=" "$config" || printf '%s\n' "$line"
			;;
		esac
	done
}

# kill_tree PID: PID and every process under it (scripts/vm, vng, QEMU), leaving the process
# group as it is, so that ^C still reaches them all.
kill_tree() {
	local child
	for child in $(pgrep -P "$1"); do kill_tree "$child"; done
	kill "$1" 2>/dev/null || true
}

log() { printf '[%s] %s\n' "${CEPM_LOG_TAG:-cepm}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# step NAME CMD...: runs CMD as the step NAME of a run of steps (make check, make check-kasan).
# On success its time joins the caller's array summary (step_line); on failure the summary so
# far is printed and the script exits 1, so the first failing step ends the run.
step() {
	local name=$1 start=$SECONDS
	shift
	log "== $name"
	if ! "$@"; then
		log "FAILED: $name"
		printf '  %s\n' "${summary[@]}" >&2
		exit 1
	fi
	summary+=("$(step_line "$name" $((SECONDS - start)))")
}
# step_line NAME SECONDS: one row of a step summary.
step_line() { printf '%-12s %5ss' "$1" "$2"; }

# The kernel build directory recorded by the last successful `make kernel`.
cepm_kdir() {
	local f=$CEPM_CACHE/current-kernel
	[ -r "$f" ] || return 1
	cat "$f"
}

# cepm_objdir KDIR: where `make module KDIR=KDIR` builds cepm.ko (the Makefile's OBJDIR).
cepm_objdir() { echo "$CEPM_ROOT/out/kbuild/$(basename "$(realpath "$1")")"; }
