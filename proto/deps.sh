#!/usr/bin/env bash
# proto/deps.sh: what proto/check.sh needs beyond the project's main `make deps`
# (which installs gcc/g++, tshark and the Rust toolchain). Idempotent and quick when done.
#   - the crates of cepm-proto (proptest) and of its fuzz crate (libfuzzer-sys), fetched
#     now so `make check` does not depend on the network.
# No cargo-fuzz and no nightly: check.sh builds the fuzz targets with plain stable cargo.
set -euo pipefail
proto=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
log() { printf '[proto-deps] %s\n' "$*" >&2; }

for tool in cargo rustc gcc g++ tshark; do
	command -v "$tool" >/dev/null || { log "missing $tool (run the main make deps first)"; exit 1; }
done
log "fetching crates for proto/ and proto/fuzz/"
cargo fetch --quiet --manifest-path "$proto/Cargo.toml"
cargo fetch --quiet --manifest-path "$proto/fuzz/Cargo.toml"
log "done"
