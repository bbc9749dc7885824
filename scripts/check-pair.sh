#!/usr/bin/env bash
# make check-pair: the pair suite (selftests/pair/run.sh) on two guests of scripts/vm-pair,
# cepm on guest A (the test kernel) against each peer on guest B, one pair boot each:
#   debian61  Debian 12's own kernel (6.1) and its stock ib_cm, rdma_cm and rdma-core
#   stock73   the test kernel with its stock ib_cm, rdma_cm and rdma-core
#   cepm      the test kernel with cepm and cepm's librdmacm (two kernels, each its own cepm)
# Usage: scripts/check-pair.sh [--short] [PAIRING...]   (default: all three, the whole suite)
#   --short   the lane of make check: debian61 only, the groups with the most coverage for
#             their time (CEPM_PAIR_SHORT_GROUPS): rping, ucmatose, rdma_conn_params RC and
#             XRC both ways against the oracle, the capture, and both kernel logs
# Each pairing's KTAP goes to stdout and out/check-pair.PAIRING.log; the exit status is 1 if
# any pairing failed. Needs what make check builds first (module, user, selftest-progs) and
# the Debian kernel (make deps: scripts/peer-kernel.sh).
set -euo pipefail
CEPM_LOG_TAG=check-pair
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

groups=()
pairings=()
for arg; do
	case $arg in
	--short)
		read -ra groups <<<"${CEPM_PAIR_SHORT_GROUPS:-rping ucmatose conn_params capture}"
		pairings=(debian61)
		;;
	debian61 | stock73 | cepm) pairings+=("$arg") ;;
	*) die "unknown pairing $arg (debian61, stock73 or cepm)" ;;
	esac
done
[ ${#pairings[@]} -gt 0 ] || pairings=(debian61 stock73 cepm)

summary=()
failed=()
for p in "${pairings[@]}"; do
	case $p in
	debian61) env=(CEPM_PAIR_B_KERNEL=debian61 CEPM_PAIR_B_STACK=stock) ;;
	stock73) env=(CEPM_PAIR_B_KERNEL=test CEPM_PAIR_B_STACK=stock) ;;
	cepm) env=(CEPM_PAIR_B_KERNEL=test CEPM_PAIR_B_STACK=cepm) ;;
	esac
	log "== pair $p: ${env[*]} ${groups[*]:-(every group)}"
	start=$SECONDS
	rc=0
	# Guest B's lines (prefixed "[b] ") go to stderr, A's KTAP to stdout: both into the log.
	env "${env[@]}" CEPM_PAIR_A_STACK=cepm scripts/vm-pair -- selftests/pair/run.sh "${groups[@]}" \
		2>&1 | tee "out/check-pair.$p.log" || rc=$?
	# The KTAP must end in a plan that was met: a guest that died mid-run ends no plan.
	grep -q '^# Totals: pass:[0-9]* fail:0 ' "out/check-pair.$p.log" || [ "$rc" != 0 ] || rc=1
	summary+=("$(step_line "pair-$p" $((SECONDS - start))) $([ "$rc" = 0 ] && echo ok || echo FAILED)")
	[ "$rc" = 0 ] || failed+=("$p")
done
log "pairings:"
printf '  %s\n' "${summary[@]}" >&2
[ ${#failed[@]} = 0 ] || die "failed: ${failed[*]} (out/check-pair.PAIRING.log)"
