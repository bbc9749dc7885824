#!/usr/bin/env bash
# Host test of selftests/cepm/lib.sh's tool_pair with a $linger (wait_pair) and of
# again_if_void, without a guest: the two ends are shell one-liners. An end that exits
# normally leaves the other $linger seconds; one that printed $void_if (lib.sh's PERFTEST_VOID:
# perftest's "Can't produce a report", or its client's reason-8 REJ) has the other end stopped
# at once, and the attempt is void, the pair run again while that is how it failed, up to
# $PERFTEST_ATTEMPTS times in all; a reason-8 REJ only if the client connected before its
# server's second rdma_listen was done (cm_clock.so's times).
set -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
# lib.sh reads the kernel's KTAP helpers; these few stand in for them.
mkdir -p "$tree/kdir/tools/testing/selftests/kselftest"
cat >"$tree/kdir/tools/testing/selftests/kselftest/ktap_helpers.sh" <<'EOF'
__ktap_test() { echo "$1 $2"; }
ktap_test_pass() { __ktap_test ok "$1"; }
ktap_test_fail() { __ktap_test "not ok" "$1"; }
EOF
export CEPM_ROOT=$tree CEPM_KDIR=$tree/kdir
# shellcheck source=selftests/cepm/lib.sh
. "$here/cepm/lib.sh"
out=$tree/pair

n=0 failed=0
# expect DESCRIPTION CMD...: one result.
expect() {
	n=$((n + 1))
	if "${@:2}"; then
		echo "ok $n $1"
	else
		echo "not ok $n $1"
		failed=$((failed + 1))
		show_file "#   " "$tree/shown"
	fi
}
uncalibrated='echo "Correlation coefficient r^2: 0.5 < 0.9"; echo "Can'"'"'t produce a report"; exit 1'

# 1. The client exits 0, the server hangs: stopped after the linger, and counted as timed out.
linger=1 tool_pair hang true -- sleep 30 -- true >"$tree/shown"
expect "an end still running 1 s after the other's normal exit is stopped (124)" \
	eval '[ "$crc $src" = "0 124" ] && grep -q "the server was still running 1 s after the other end had exited: stopped" "$tree/shown"'

# 2. Each attempt's client cannot calibrate; the server would run 30 s: it is stopped at once,
# and the pair runs three times in all, none of them waiting out the linger.
calls=$tree/calls
count_calls() { echo x >>"$calls"; "$@"; }
start=$SECONDS
linger=20 again_if_void void tool_pair void true -- sleep 30 -- count_calls sh -c "$uncalibrated" \
	>"$tree/shown"
took=$((SECONDS - start))
expect "an uncalibrated end voids its attempt: the other is stopped at once, each time" \
	eval '[ "$(grep -c "the server was stopped at once: the other end printed" "$tree/shown")" = 3 ]'
expect "... and the pair ran $PERFTEST_ATTEMPTS times in all ($(wc -l <"$calls") runs, ${took} s), then failed ($crc, $src)" \
	eval '[ "$(wc -l <"$calls")" = "$PERFTEST_ATTEMPTS" ] && [ "$crc" = 1 ]'

# 3. Any other failure is not retried, and leaves the other end its linger.
rm -f "$calls"
linger=1 again_if_void other tool_pair other true -- sleep 30 -- count_calls sh -c 'echo broken; exit 2' \
	>"$tree/shown"
expect "another failure runs once, the other end stopped after its linger ($crc, $src)" \
	eval '[ "$(wc -l <"$calls")" = 1 ] && [ "$crc $src" = "2 124" ] && grep -q "still running 1 s" "$tree/shown"'

# 4. A second attempt that succeeds ends the retries.
rm -f "$calls"
flip() { if [ -e "$tree/flip" ]; then echo "4096 200 1.0 1.0"; else touch "$tree/flip"; sh -c "$uncalibrated"; fi; }
linger=20 again_if_void flip tool_pair flip true -- sh -c 'sleep 0.2' -- count_calls flip >"$tree/shown"
expect "a retry that succeeds is the result: two runs, both ends 0 ($crc, $src)" \
	eval '[ "$(wc -l <"$calls")" = 2 ] && [ "$crc $src" = "0 0" ]'

# 5. perftest -R's client connected before the server's data listener was up: rejected with
# reason 8, it exits 1 (over cepm's librdmacm: rdmacm_tools check 11) while the server waits.
# The attempt is void as well: the server is stopped at once, and the pair runs again.
rm -f "$calls" "$tree/flip"
# cm_clock.so's lines (preloaded into both ends) say when each end called what: this client
# connected at 15 s, and the server (below) never listened a second time.
early='echo "cm_clock: connect 1 start 15.000000000"; echo "cm_clock: rejected status 8 15.100000000"; echo "RDMA CM event error:"; echo "Event: RDMA_CM_EVENT_REJECTED; error: 8."; exit 1'
flip() { if [ -e "$tree/flip" ]; then echo "4096 200 1.0 1.0"; else touch "$tree/flip"; sh -c "$early"; fi; }
# The server waits for ever the first time (exec: the signal reaches the sleep), not the second.
server() { if [ -e "$tree/served" ]; then sleep 0.2; else touch "$tree/served"; exec sleep 30; fi; }
start=$SECONDS
linger=20 again_if_void early tool_pair early true -- server -- count_calls flip >"$tree/shown"
took=$((SECONDS - start))
expect "a client rejected for a listener not up yet voids its attempt: the server stopped at once, a second run, both ends 0 (${took} s; $crc, $src)" \
	eval '[ "$(wc -l <"$calls")" = 2 ] && [ "$crc $src" = "0 0" ] && grep -q "the server was stopped at once" "$tree/shown" && [ "$took" -lt 10 ]'

# 6. The same REJ when the client connected after its server's second rdma_listen was done
# (cm_clock.so's times): no listener was missing, so the CM rejected a REQ it should have
# taken. Not void: the pair runs once and fails.
rm -f "$calls" "$tree/flip" "$tree/served"
listened='echo "cm_clock: listen 1 done 10.000000000"; echo "cm_clock: listen 2 done 20.000000000"; exec sleep 30'
late='echo "cm_clock: connect 1 start 15.000000000"; echo "cm_clock: connect 2 start 25.000000000"; echo "cm_clock: rejected status 8 25.100000000"; echo "Event: RDMA_CM_EVENT_REJECTED; error: 8."; exit 1'
flip() { if [ -e "$tree/flip" ]; then echo "4096 200 1.0 1.0"; else touch "$tree/flip"; sh -c "$late"; fi; }
linger=20 again_if_void wrong tool_pair wrong true -- sh -c "$listened" -- count_calls flip >"$tree/shown"
expect "a client rejected (status 8) though it connected after its server's second listen: not void, one run, failed ($crc, $src)" \
	eval '[ "$(wc -l <"$calls")" = 1 ] && [ "$crc" = 1 ] && grep -q "connected after its server listened" "$tree/shown"'

echo "# check-tool-pair: $((n - failed)) of $n passed"
[ "$failed" = 0 ]
