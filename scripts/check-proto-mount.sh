#!/usr/bin/env bash
# cepm.ko mounts proto/src file by file (rust/cepm_main.rs); the list must be lib.rs's list, so
# that every file the host tests is also compiled into the module, and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(sed -n 's/^pub mod \([a-z_]*\);$/\1/p' proto/src/lib.rs)
kernel=$(sed -n '/^pub mod proto {$/,/^}$/s/^    pub mod \([a-z_]*\);$/\1/p' rust/cepm_main.rs)
if [ "$host" != "$kernel" ]; then
	echo "check-proto-mount: rust/cepm_main.rs mounts a different module list than proto/src/lib.rs:" >&2
	diff <(echo "$host") <(echo "$kernel") >&2 || true
	exit 1
fi
echo "check-proto-mount: $(echo "$host" | wc -l) protocol-core files compiled into cepm.ko"
