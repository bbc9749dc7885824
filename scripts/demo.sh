#!/usr/bin/env bash
# make demo: build what is missing, boot the test VM and show cepm live: cepmctl, then
# rdma-core's rping over cepm's librdmacm against the stock stack (scripts/demo-guest.sh).
set -euo pipefail
CEPM_LOG_TAG=demo
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

scripts/deps.sh
scripts/kernel.sh
make --no-print-directory module user
scripts/vm -- scripts/demo-guest.sh || die "the demo failed: its output above says where"
