#!/usr/bin/env bash
# make bench-listen: build what is missing, then run scripts/bench-listen-guest.sh in one VM
# boot. A benchmark, not a test: it reports numbers (out/bench-listen.md) and fails only if a
# run fails. CEPM_KO=PATH measures another build of cepm.ko the same way.
set -euo pipefail
CEPM_LOG_TAG=bench-listen
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

scripts/deps.sh
scripts/kernel.sh
make --no-print-directory module user
scripts/vm -- scripts/bench-listen-guest.sh "$@"
