#!/usr/bin/env bash
# The KASAN lane's toolchain and kernel (make check-kasan), cached under $CEPM_CACHE like the
# default kernel.
#
#   scripts/kasan.sh kernel     build (or find) the KASAN kernel; prints its tree's path
#   scripts/kasan.sh run CMD..  run CMD in the trixie chroot, /proc, /sys, /dev, the cache and
#                               the repository mounted at the same paths as outside
#
# Why a chroot: 7.3's CONFIG_RUST needs CC_IS_CLANG when KASAN is on, an LLVM=1 build needs
# clang >= 17, and Debian 12 has clang 16 at most.  Debian trixie has clang 19, rustc 1.85.1
# (7.3's minimum) and bindgen 0.71 (its minimum), all as packages, so debootstrap gives the
# whole toolchain without rustup or cargo installs.  See ../shared/TOOLCHAIN.md.
set -euo pipefail
CEPM_LOG_TAG=kasan
. "$(dirname "$0")/common.sh"

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

CHROOT_PKGS=clang-19,lld-19,llvm-19,rustc,rust-src,bindgen,libclang-19-dev,make,flex,bison,bc,libelf-dev,libssl-dev,python3,cpio,kmod,xz-utils,ca-certificates
CHROOT_KEY=$(printf 'trixie minbase %s\n' "$CHROOT_PKGS" | sha256sum | cut -c1-12)
CHROOT=$CEPM_CACHE/trixie-$CHROOT_KEY
FRAGMENT=$CEPM_ROOT/scripts/kernel-kasan.config
LLVM_SUFFIX=-19

mkdir -p "$CEPM_CACHE"

ensure_chroot() {
	[ -e "$CHROOT/.cepm-ready" ] && return 0
	command -v debootstrap >/dev/null || {
		log "installing debootstrap"
		$SUDO apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	}
	log "debootstrap trixie into $CHROOT (about 2 minutes, 2.2 GB)"
	$SUDO rm -rf "$CHROOT.tmp"
	$SUDO debootstrap --variant=minbase --include="$CHROOT_PKGS" trixie "$CHROOT.tmp" \
		http://deb.debian.org/debian >"$CEPM_CACHE/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$CEPM_CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
	$SUDO mv "$CHROOT.tmp" "$CHROOT"
	$SUDO touch "$CHROOT/.cepm-ready"
}

# in_chroot CMD...: CMD in the chroot, in a private mount namespace so that nothing stays
# mounted when it ends.  objtool needs /proc; the cache and the repository keep their paths so
# that Kbuild's absolute paths mean the same inside and out.
in_chroot() {
	local cwd=$PWD
	$SUDO unshare --mount --propagation private -- /bin/bash -euc '
		root=$1 cwd=$2 cache=$3 repo=$4; shift 4
		for d in /proc /sys /dev "$cache" "$repo"; do
			mkdir -p "$root$d"
			mount --rbind "$d" "$root$d"
		done
		exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LANG=C.UTF-8 /bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
	' in_chroot "$CHROOT" "$cwd" "$CEPM_CACHE" "$CEPM_ROOT" "$@"
}

chroot_tools() {
	in_chroot sh -c "clang$LLVM_SUFFIX --version | head -1; rustc --version; bindgen --version"
}

build_kernel() {
	local gcc_kdir key kver kdir stamp jobs start pid
	gcc_kdir=$(cepm_kdir) && [ -f "$gcc_kdir/.config" ] || die "run 'make kernel' first: the KASAN config starts from its .config"
	ensure_chroot
	key=$({
		basename "$gcc_kdir"
		cat "$gcc_kdir/.config" "$FRAGMENT"
		chroot_tools
	} | sha256sum | cut -c1-12)
	kver=$(basename "$gcc_kdir" | sed 's/^linux-\([^-]*\)-.*/\1/')
	kdir=$CEPM_CACHE/linux-$kver-kasan-$key
	stamp=$kdir/.cepm-built

	exec 9>"$CEPM_CACHE/kernel-kasan.lock"
	flock 9
	if [ -e "$stamp" ]; then
		log "cached: $kdir"
		echo "$kdir"
		return 0
	fi

	# The same source as the default kernel, unpacked from the same .deb.
	if [ ! -e "$kdir/Makefile" ]; then
		local deb
		deb=$(ls "$CEPM_CACHE"/debs/linux-source-"$CEPM_LINUX_SERIES"_*.deb | head -1)
		[ -s "$deb" ] || die "no linux-source .deb in $CEPM_CACHE/debs: run 'make kernel' first"
		log "unpacking $(basename "$deb") into $kdir"
		local tmp
		tmp=$(mktemp -d "$CEPM_CACHE/unpack.XXXXXX")
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards '*/linux-source-*.tar.xz'
		rm -rf "$kdir.tmp"
		mkdir -p "$kdir.tmp"
		tar -xJf "$tmp"/usr/src/linux-source-*.tar.xz -C "$kdir.tmp" --strip-components=1
		rm -rf "$tmp"
		mv "$kdir.tmp" "$kdir"
	fi

	cd "$kdir"
	if [ ! -e .cepm-configured ]; then
		log "configuring: $(basename "$gcc_kdir")'s .config + scripts/kernel-kasan.config, clang$LLVM_SUFFIX"
		cp "$gcc_kdir/.config" .config
		scripts/kconfig/merge_config.sh -m .config "$FRAGMENT" >config.log 2>&1
		in_chroot make LLVM=$LLVM_SUFFIX olddefconfig >>config.log 2>&1
		local fragment lost
		mapfile -t fragment < <(grep '^CONFIG_' "$FRAGMENT")
		lost=$(config_missing .config "${fragment[@]}" CONFIG_RUST=y CONFIG_CC_IS_CLANG=y CONFIG_PROVE_LOCKING=y \
			CONFIG_DEBUG_KMEMLEAK=y CONFIG_DEBUG_ATOMIC_SLEEP=y CONFIG_DEBUG_LIST=y CONFIG_RDMA_RXE=m \
			CONFIG_USER_NS=y)
		[ -z "$lost" ] || { printf '%s\n' "$lost" | sed 's/^/[kasan] option lost: /' >&2
			die "the KASAN config did not resolve (see $kdir/config.log)"; }
		touch .cepm-configured
	fi

	jobs=${CEPM_JOBS:-$(($(nproc) + 1))}
	log "building with clang$LLVM_SUFFIX -j$jobs (cold: about 40 minutes on 2 cores); log: $kdir/build.log"
	start=$(date +%s)
	in_chroot make LLVM=$LLVM_SUFFIX -j"$jobs" >build.log 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		sleep 60 & wait $! || true
		kill -0 $pid 2>/dev/null || break
		log "$(( ($(date +%s) - start) / 60 )) min: $(grep -cE '^  (CC|RUSTC|AS|LD)' build.log || true) objects"
	done
	if ! wait $pid; then
		tail -n 40 build.log >&2
		die "KASAN kernel build failed (full log: $kdir/build.log)"
	fi
	echo "$(( $(date +%s) - start ))" >.cepm-build-seconds
	log "built in $(cat .cepm-build-seconds) s"
	touch "$stamp"
	echo "$kdir"
}

case ${1:-} in
kernel) build_kernel ;;
run) shift; ensure_chroot; in_chroot "$@" ;;
*) die "usage: scripts/kasan.sh kernel | run CMD..." ;;
esac
