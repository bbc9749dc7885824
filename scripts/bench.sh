#!/usr/bin/env bash
# make bench: build what is missing, then run scripts/bench-guest.sh in one VM boot.  A
# benchmark, not a test: it reports numbers (out/bench.md) and fails only if a run fails.
set -euo pipefail
CEPM_LOG_TAG=bench
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

scripts/deps.sh
scripts/kernel.sh
make --no-print-directory module user
scripts/vm -- scripts/bench-guest.sh "$@"
