#!/usr/bin/env bash
# make kernel: fetch Linux 7.3 from Debian, configure it for the test guest and build it,
# cached under $CEPM_CACHE/linux-<version>-<key>/.  A second run with the same inputs is a no-op.
set -euo pipefail
CEPM_LOG_TAG=kernel
. "$(dirname "$0")/common.sh"

# Exact package pinned for reproducibility; older versions stay in the archive.
DEB_PKG=linux-source-$CEPM_LINUX_SERIES
DEB_VERSION=${CEPM_LINUX_DEB_VERSION:-7.3.4-1~bpo13+1}
FRAGMENT=$CEPM_ROOT/scripts/kernel.config

command -v vng >/dev/null && command -v bindgen >/dev/null || die "run 'make deps' first"

# The cache key covers everything that changes the built tree.
key_inputs() {
	echo "$DEB_PKG $DEB_VERSION"
	cat "$FRAGMENT"
	rustc --version; bindgen --version; gcc --version | head -1
	vng --version; echo "$LIBCLANG_PATH"
}
KEY=$(key_inputs | sha256sum | cut -c1-12)
KVER=${DEB_VERSION%%-*}
KDIR=$CEPM_CACHE/linux-$KVER-$KEY
STAMP=$KDIR/.cepm-built

mkdir -p "$CEPM_CACHE"
exec 9>"$CEPM_CACHE/kernel.lock"
flock 9

if [ -e "$STAMP" ]; then
	echo "$KDIR" >"$CEPM_CACHE/current-kernel"
	log "cached: $KDIR"
	exit 0
fi

# 1. Source: apt-get download with a private sources list, leaving the machine's apt alone.
DEB_DIR=$CEPM_CACHE/debs
DEB=$DEB_DIR/${DEB_PKG}_${DEB_VERSION//:/%3a}_all.deb
if [ ! -s "$DEB" ]; then
	APT_DIR=$CEPM_CACHE/apt
	mkdir -p "$APT_DIR/lists/partial" "$DEB_DIR"
	cat >"$APT_DIR/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
SRC
	apt_opts=(-o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$APT_DIR/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
	log "fetching $DEB_PKG=$DEB_VERSION from trixie-backports"
	apt-get "${apt_opts[@]}" update -qq
	(cd "$DEB_DIR" && apt-get "${apt_opts[@]}" download -qq "$DEB_PKG=$DEB_VERSION")
	[ -s "$DEB" ] || die "download did not produce $DEB"
fi

# 2. Unpack into a fresh tree; a half-built tree from an interrupted run is reused.
if [ ! -e "$KDIR/Makefile" ]; then
	log "unpacking into $KDIR"
	tmp=$(mktemp -d "$CEPM_CACHE/unpack.XXXXXX")
	dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards '*/linux-source-*.tar.xz'
	mkdir -p "$KDIR.tmp"
	tar -xJf "$tmp"/usr/src/linux-source-*.tar.xz -C "$KDIR.tmp" --strip-components=1
	rm -rf "$tmp"
	mv "$KDIR.tmp" "$KDIR"
fi

cd "$KDIR"

# 3. Configuration: virtme-ng's minimal bootable config plus our fragment.
if [ ! -e .config ] || [ "$(cat .cepm-fragment 2>/dev/null)" != "$(sha256sum <"$FRAGMENT")" ]; then
	log "configuring (vng --kconfig + scripts/kernel.config)"
	make rustavailable >/dev/null || die "Rust toolchain not usable for this kernel (make rustavailable)"
	vng --kconfig --config "$FRAGMENT" >config.log 2>&1 || { cat config.log >&2; die "vng --kconfig failed"; }
	# vng appends its own must-haves after the fragment (DWARF among them); merge ours last so it wins.
	scripts/kconfig/merge_config.sh -m .config "$FRAGMENT" >>config.log 2>&1
	make olddefconfig >>config.log 2>&1
	# Every option the fragment sets must have survived Kconfig's dependency resolution.
	mapfile -t fragment <"$FRAGMENT"
	lost=$(config_missing .config "${fragment[@]}")
	[ -z "$lost" ] || { printf '%s\n' "$lost" | sed 's/^/[kernel] not in .config: /' >&2; die "config fragment did not apply cleanly"; }
	sha256sum <"$FRAGMENT" >.cepm-fragment
fi

# 4. Build, with a progress line every minute.
JOBS=${CEPM_JOBS:-$(($(nproc) + 1))}
log "building bzImage and modules with -j$JOBS (cold: 9 to 21 minutes on 2 cores); log: $KDIR/build.log"
start=$(date +%s)
make -j"$JOBS" >build.log 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null; do
	sleep 60 & wait $! || true
	kill -0 $pid 2>/dev/null || break
	n=$(grep -cE '^  (CC|RUSTC|AS|LD)' build.log || true)
	log "$(( ($(date +%s) - start) / 60 )) min: $n objects; $(tail -n1 build.log | cut -c1-70)"
done
if ! wait $pid; then
	tail -n 40 build.log >&2
	die "kernel build failed (full log: $KDIR/build.log)"
fi
log "built in $(( $(date +%s) - start )) s"
echo "$(( $(date +%s) - start ))" >.cepm-build-seconds
touch "$STAMP"
echo "$KDIR" >"$CEPM_CACHE/current-kernel"
