#!/usr/bin/env bash
# scripts/peer-kernel.sh: fetch and unpack the distribution kernels a peer guest of
# scripts/vm-pair can boot, idempotently; prints the kernel image of each.
#
# Debian 12's own kernel (6.1) with its in-tree ib_cm, rdma_cm and rdma_rxe is the stock peer
# that cepm meets in the field.  Its .deb is fetched with the machine's apt (never installed:
# nothing goes into the host's /boot or /lib/modules) and unpacked under
# CEPM_CACHE/peer-kernels/<package>/tree, where vng finds the modules beside the image
# (boot/vmlinuz-KVER and lib/modules/KVER) and packs the ones it needs to mount its root
# (virtio-fs, 9p, virtio-net are modules there) into its initramfs.
set -euo pipefail
CEPM_LOG_TAG=peer-kernel
. "$(dirname "$0")/common.sh"

# Pinned: the ABI name is part of the package name, and the version picks the exact build.
DEB61_PKG=linux-image-6.1.0-57-amd64
DEB61_VERSION=6.1.192-3
DEB61_KVER=6.1.0-57-amd64

PEER_KERNELS=$CEPM_CACHE/peer-kernels

# fetch_deb PKG VERSION KVER: the unpacked root of PKG, ready to boot.
fetch_deb() {
	local pkg=$1 version=$2 kver=$3 dir=$PEER_KERNELS/$1 deb
	deb=$dir/${pkg}_${version}_amd64.deb
	mkdir -p "$dir"
	if [ ! -s "$deb" ]; then
		log "downloading $pkg $version"
		# apt's lists may not hold the package before an update (a fresh machine).
		(cd "$dir" && { apt-get download -qq "$pkg=$version" 2>/dev/null ||
			{ apt-get update -qq && apt-get download -qq "$pkg=$version"; }; })
	fi
	# Unpacked into a temporary directory first, so that an interrupted run leaves no
	# half tree behind that a later run would take for complete.
	if [ ! -e "$dir/tree/.complete" ]; then
		log "unpacking $pkg"
		rm -rf "$dir/tree" "$dir/tree.tmp"
		dpkg -x "$deb" "$dir/tree.tmp"
		# The .deb ships no modules.dep (the package's postinst runs depmod); modprobe
		# in the guest needs it, and vng would otherwise run depmod at every boot.
		depmod -a -b "$dir/tree.tmp" "$kver"
		touch "$dir/tree.tmp/.complete"
		mv "$dir/tree.tmp" "$dir/tree"
	fi
	[ -f "$dir/tree/boot/vmlinuz-$kver" ] || die "$pkg has no boot/vmlinuz-$kver"
	echo "$dir/tree/boot/vmlinuz-$kver"
}

fetch_deb "$DEB61_PKG" "$DEB61_VERSION" "$DEB61_KVER"
