#!/usr/bin/env bash
# Host test of scripts/check-vm-log.sh --selftest, without a guest: a copy of the script runs in
# a scratch tree whose scripts/selftest.sh and selftests/run.sh are fakes that print what a
# guest would.  It must pass a complete log, fail one that lacks the guest's account or whose
# account differs from the plan, and keep the command's exit status.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts" "$tree/selftests"
cp "$here/check-vm-log.sh" "$here/common.sh" "$tree/scripts/"
cat >"$tree/selftests/run.sh" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' one.sh two.sh@loopback three.sh@two-hosts
EOF
# The fake guest: announces its arguments and the announced text as vm-guest.sh does; FAKE_*
# bend it.
cat >"$tree/scripts/selftest.sh" <<'EOF'
#!/usr/bin/env bash
if [ "${1:-}" = --plan ]; then
	echo "guest 1 (about 3 s): $(selftests/run.sh --list | tr '\n' ' ')"
	exit 0
fi
set -- selftests/run.sh $(selftests/run.sh --list) ${FAKE_EXTRA_ARG:-}
text=$CEPM_VM_ANNOUNCE
[ -z "${FAKE_CUT:-}" ] || text=${text:0:2000}
[ -n "${FAKE_SILENT:-}" ] ||
	echo "vm-guest: $# arguments, $(printf '%s\n' "$@" | cksum); announced $(printf '%s\n' $text | cksum)" >&2
echo "TAP version 13"
exit "${FAKE_RC:-0}"
EOF
chmod +x "$tree/selftests/run.sh" "$tree/scripts/selftest.sh" "$tree/scripts/check-vm-log.sh"

n=0 failed=0
# expect RC ENV...: check-vm-log.sh --selftest exits RC with ENV set.
expect() {
	local want=$1 rc=0
	shift
	n=$((n + 1))
	(cd "$tree" && env "$@" scripts/check-vm-log.sh --selftest) >"$tree/shown" 2>&1 || rc=$?
	if [ "$rc" = "$want" ]; then
		echo "ok $n: exit $rc with ${*:-no change}"
	else
		echo "not ok $n: exit $rc, not $want, with ${*:-no change}:"
		sed 's/^/  | /' "$tree/shown"
		failed=$((failed + 1))
	fi
}
expect 0
expect 1 FAKE_SILENT=1
expect 1 FAKE_EXTRA_ARG=four.sh
expect 1 FAKE_CUT=1
expect 3 FAKE_RC=3
[ "$failed" = 0 ] && echo "check-vm-log-test: $n of $n passed" || { echo "check-vm-log-test: $failed of $n failed"; exit 1; }
