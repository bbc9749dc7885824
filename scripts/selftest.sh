#!/usr/bin/env bash
# make selftest: every selftest of `selftests/run.sh --list` (or the TESTs given), spread over
# test guests booted side by side, each running its share with selftests/run.sh.
#   scripts/selftest.sh [TEST[@TOPOLOGY][:LIMIT]...]
#   scripts/selftest.sh --plan [TEST...]    which guest would run what (boots nothing)
# A TCG guest busy with the tests keeps more than one host CPU busy (its two vCPUs: the tool and
# the kernel's work, the server and the client; 184 s of CPU in 131 s), so a 2-core host runs
# one guest (two side by side take each test about twice as long: docs/design.md, "Guests side
# by side") and a bigger host one per two CPUs.  Each guest is a machine of its own
# (kernel, rxe, namespaces, cepm.ko), so the tests are no less isolated than in one guest,
# where run.sh restores the baseline after each.  Every guest ends with dmesg_clean.sh
# (run.sh appends it), so every kernel is judged.
# The entries are spread by their usual time (selftests/durations), longest first, each onto
# the guest with the least so far; each guest runs its share in run.sh's order.
# Environment: CEPM_VM_SHARDS, the number of guests (default: one per two host CPUs, at most 4),
# and scripts/vm's (CEPM_VM_CPUS, the vCPUs of each guest, included).  Output: every guest's
# lines as they come, prefixed [1], [2]...; each guest's whole output also in out/selftest-K.log.
set -euo pipefail
CEPM_LOG_TAG=selftest
. "$(dirname "$0")/common.sh"
cd "$CEPM_ROOT"

plan_only=
if [ "${1:-}" = --plan ]; then
	plan_only=1
	shift
fi
if [ $# -gt 0 ]; then
	tests=("$@")
else
	mapfile -t tests < <(selftests/run.sh --list)
fi
[ ${#tests[@]} -gt 0 ] || die "no tests to run (selftests/run.sh --list failed?)"

if [ -n "${CEPM_VM_SHARDS:-}" ]; then
	shards=$CEPM_VM_SHARDS
	[[ $shards =~ ^[1-9][0-9]*$ ]] || die "CEPM_VM_SHARDS must be a positive number, not '$shards'"
else
	shards=$(($(nproc) / 2))
	[ "$shards" -ge 1 ] || shards=1
	[ "$shards" -le 4 ] || shards=4
fi
[ "$shards" -le ${#tests[@]} ] || shards=${#tests[@]}

# One line per entry, in run.sh's order: INDEX GUEST ENTRY SECONDS.
plan=$(printf '%s\n' "${tests[@]}" | awk '
	FNR == NR { if ($1 !~ /^#/ && NF >= 2) seconds[$1] = $2; next }
	{ entry = $1; sub(/:[0-9]+$/, "", entry)
	  print (entry in seconds ? seconds[entry] : seconds["DEFAULT"]), FNR, $1 }' \
	selftests/durations - | sort -k1,1nr -k2,2n | awk -v guests="$shards" '
	{ least = 1
	  for (g = 2; g <= guests; g++) if (load[g] < load[least]) least = g
	  load[least] += $1
	  print $2, least, $3, $1 }' | sort -k1,1n)

declare -a share_of seconds_of
while read -r _ guest entry secs; do
	share_of[guest]+="$entry "
	seconds_of[guest]=$((${seconds_of[guest]:-0} + secs))
done <<<"$plan"

if [ -n "$plan_only" ]; then
	for ((g = 1; g <= shards; g++)); do
		echo "guest $g (about ${seconds_of[g]} s): ${share_of[g]% }"
	done
	exit 0
fi

if [ "$shards" = 1 ]; then
	exec scripts/vm -- selftests/run.sh "${tests[@]}"
fi

# run_guest G ENTRY...: one guest running its share; its output prefixed, and kept.
run_guest() {
	local g=$1 rc
	shift
	scripts/vm -- selftests/run.sh "$@" 2>&1 | tee "out/selftest-$g.log" | sed -u "s/^/[$g] /"
	rc=${PIPESTATUS[0]}
	log "guest $g: $(grep -h '^# cepm selftests:' "out/selftest-$g.log" | sed 's/^# //' || echo "no summary"), exit $rc, ${SECONDS}s after the start"
	return "$rc"
}

# vng rebuilds the kernel's module tree for the guest (KDIR/.virtme_mods) when the kernel's
# modules.order is newer than it: two guests starting together would both rewrite it.  The
# first starts alone until that tree is up to date, which it usually already is.
kdir=${KDIR:-$(cepm_kdir)} || die "no cached kernel: run 'make kernel' first"
mods_fresh() {
	local dep=$kdir/.virtme_mods/lib/modules/0.0.0/modules.dep
	[ -e "$dep" ] && ! [ "$kdir/modules.order" -nt "$dep" ]
}

pids=()
# Background jobs ignore ^C: pass it on to every guest.
trap 'for p in "${pids[@]}"; do kill_tree "$p"; done; exit 130' INT TERM
log "$shards guests side by side; their whole output: out/selftest-{1..$shards}.log"
for ((g = 1; g <= shards; g++)); do
	log "guest $g (about ${seconds_of[g]} s): ${share_of[g]% }"
	# shellcheck disable=SC2086 # the share is a list of words
	run_guest "$g" ${share_of[g]} &
	pids+=($!)
	if [ "$g" = 1 ]; then
		while ! mods_fresh && kill -0 "${pids[0]}" 2>/dev/null; do sleep 1; done
	fi
done

failed=()
for ((g = 1; g <= shards; g++)); do
	wait "${pids[g - 1]}" || failed+=("$g")
done
trap - INT TERM
if [ ${#failed[@]} -gt 0 ]; then
	for g in "${failed[@]}"; do
		# The failed entries, then what they said of their failing checks (run.sh's digest).
		sed -n -e '/^not ok/p' -e '/^# why the failed tests failed/,/^# cepm selftests:/p' \
			"out/selftest-$g.log" | sed "s/^/[$g] /" >&2 || true
	done
	die "guest(s) ${failed[*]} failed: see out/selftest-N.log"
fi
log "all $shards guests passed in ${SECONDS}s"
