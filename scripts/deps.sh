#!/usr/bin/env bash
# make deps: install what building and testing cepm needs, idempotently.
# Re-running with everything present only checks, and takes seconds.
set -euo pipefail
CEPM_LOG_TAG=deps
. "$(dirname "$0")/common.sh"

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# Debian packages: kernel build, VM (and virtiofsd's build), RDMA userspace, guest tools.
PKGS=(
	build-essential bc bison flex libelf-dev libssl-dev dwarves
	xz-utils cpio kmod rsync python3-venv
	qemu-system-x86 busybox-static udev
	iproute2 rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev rdmacm-utils perftest
	libfabric-bin libucx-dev
	tshark
	libseccomp-dev libcap-ng-dev
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	$SUDO apt-get update -qq
	# tshark asks whether non-root users may capture; the default (no) is fine.
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	log "Debian packages: all ${#PKGS[@]} present"
fi

command -v rustup >/dev/null || die "rustup not found: the machine's Rust toolchain is required"
if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
	log "adding rustup component rust-src"
	rustup component add rust-src
else
	log "rust-src: present"
fi

if [ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$CEPM_BINDGEN_VERSION" ]; then
	log "building bindgen-cli $CEPM_BINDGEN_VERSION into $CEPM_TOOLS (about 3 minutes)"
	cargo install --quiet --locked --root "$CEPM_TOOLS" bindgen-cli --version "$CEPM_BINDGEN_VERSION"
else
	log "bindgen $CEPM_BINDGEN_VERSION: present"
fi

# The Rust virtiofsd, which Debian 12 does not package (its qemu ships only the old C daemon,
# which vng cannot use).  With it on PATH, vng serves the guest's root over virtio-fs with the
# guest's page cache instead of over 9p: every process start in the guest is cheaper, a
# cepmctl start about three times (docs/design.md, "The test VM's root filesystem").
if ! virtiofsd_present; then
	log "building virtiofsd $CEPM_VIRTIOFSD_VERSION into $CEPM_TOOLS (about a minute)"
	cargo install --quiet --locked --root "$CEPM_TOOLS" virtiofsd --version "$CEPM_VIRTIOFSD_VERSION"
else
	log "virtiofsd $CEPM_VIRTIOFSD_VERSION: present"
fi

venv_ok() {
	[ -x "$CEPM_VENV/bin/vng" ] &&
	[ "$("$CEPM_VENV/bin/pip" show virtme-ng 2>/dev/null | awk '/^Version:/{print $2}')" = "$CEPM_VIRTME_NG_VERSION" ] &&
	[ "$("$CEPM_VENV/bin/pip" show libclang 2>/dev/null | awk '/^Version:/{print $2}')" = "$CEPM_LIBCLANG_VERSION" ]
}
if ! venv_ok; then
	log "creating Python venv $CEPM_VENV (virtme-ng $CEPM_VIRTME_NG_VERSION, libclang $CEPM_LIBCLANG_VERSION)"
	mkdir -p "$CEPM_CACHE"
	python3 -m venv "$CEPM_VENV"
	"$CEPM_VENV/bin/pip" install --quiet --disable-pip-version-check \
		"virtme-ng==$CEPM_VIRTME_NG_VERSION" "libclang==$CEPM_LIBCLANG_VERSION"
else
	log "venv: virtme-ng $CEPM_VIRTME_NG_VERSION, libclang $CEPM_LIBCLANG_VERSION present"
fi

# Debian 12's kernel, the stock peer of make check-pair (scripts/vm-pair's guest B).
log "peer kernel: $("$CEPM_ROOT/scripts/peer-kernel.sh")"

# The protocol core's extra needs (its crates, fetched ahead of the offline-friendly checks).
"$CEPM_ROOT/proto/deps.sh"

log "done"
