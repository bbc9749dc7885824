#!/usr/bin/env bash
# Host-side check of scripts/selftest.sh's placement (make host-test): spread over 1 to 5 guests,
# every entry of `selftests/run.sh --list` is placed exactly once, each guest keeps run.sh's
# order, and no guest's share exceeds an even split by more than the longest entry.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mapfile -t all < <("$root/selftests/run.sh" --list)
fail() { echo "check-plan: $*" >&2; exit 1; }
for guests in 1 2 3 4 5; do
	plan=$(CEPM_VM_SHARDS=$guests "$root/scripts/selftest.sh" --plan)
	[ "$(grep -c '^guest ' <<<"$plan")" = "$guests" ] || fail "$guests guests asked, got: $plan"
	placed=$(sed 's/^guest [0-9]* (about [0-9]* s): //' <<<"$plan" | tr ' ' '\n' | grep -v '^$')
	[ "$(sort <<<"$placed")" = "$(printf '%s\n' "${all[@]}" | sort)" ] ||
		fail "with $guests guests the entries placed differ from run.sh --list"
	while read -r line; do
		share=(${line#*: })
		order=$(printf '%s\n' "${all[@]}" | grep -xF -f <(printf '%s\n' "${share[@]}"))
		[ "$order" = "$(printf '%s\n' "${share[@]}")" ] || fail "guest's share not in run.sh's order: $line"
	done <<<"$plan"
	loads=$(sed -n 's/^guest [0-9]* (about \([0-9]*\) s).*/\1/p' <<<"$plan")
	total=$(paste -sd+ <<<"$loads" | bc)
	longest=$(awk '$1 !~ /^#/ && NF >= 2 { print $2 }' "$root/selftests/durations" | sort -n | tail -1)
	max=$(sort -n <<<"$loads" | tail -1)
	[ "$max" -le $((total / guests + longest)) ] || fail "$guests guests: a share of $max s (total $total s)"
done
echo "check-plan: every entry placed once, in order, over 1 to 5 guests"
