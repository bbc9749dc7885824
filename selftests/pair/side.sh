#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# One guest's end of a pair test (selftests/pair/run.sh), run locally on guest A and through
# $PEER on guest B, so that a server runs the same way on either:
#   side.sh start NAME SECONDS CMD...  runs CMD in the background under timeout SECONDS,
#                                      its output (stdout and stderr) to /tmp/pair/NAME
#   side.sh listens PORT [PORT_SPACE]  succeeds once a listener of this guest's connection
#                                      manager is on PORT (port space TCP, UDP or IB)
#   side.sh said NAME REGEX            succeeds once a line of NAME's output matches REGEX
#                                      (grep -E): a server that says when it listens
#   side.sh finish NAME SECONDS [stop] waits up to SECONDS for NAME's CMD (with "stop", ends
#                                      it first: cmtime's server never exits), prints its
#                                      output, and exits with its status (124 if stopped
#                                      at the limit)
# The state of a server is in files under /tmp/pair, each guest's own: a request on the
# channel returns once its command does, while the server goes on.
set -euo pipefail
dir=/tmp/pair

# pid_of NAME: the timeout process that runs NAME's command, and its process group.
pid_of() { cat "$dir/$1.pid"; }

case ${1:?start, listens, said or finish} in
start)
	name=$2 secs=$3
	shift 3
	mkdir -p "$dir"
	rm -f "$dir/$name" "$dir/$name.pid" "$dir/$name.rc"
	# The request that starts it returns at once: nothing of the job holds its output.
	# In a session of its own: finish signals the whole group, the command's children too,
	# so that nothing of it keeps a port into the next test.
	(
		setsid timeout "$secs" "$@" </dev/null >"$dir/$name" 2>&1 &
		echo $! >"$dir/$name.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >"$dir/$name.rc"
	) </dev/null >/dev/null 2>&1 &
	# The pid file exists before the request returns: finish may signal it at once.
	for _ in $(seq 100); do [ -s "$dir/$name.pid" ] && break; sleep 0.05; done
	;;
listens)
	port=$2 ps=${3:-TCP}
	if [ -d /sys/module/cepm ]; then
		# cepm: a CEP in LISTEN for rdma_cm's service ID of PORT (cepmctl prints it unpadded).
		case $ps in TCP) space=0x0106 ;; UDP) space=0x0111 ;; IB) space=0x013f ;; *) exit 2 ;; esac
		want=$(((space << 16) + port))
		cepmctl=$(dirname "$0")/../../target/release/cepmctl
		while read -r _ state service _; do
			[ "$state" = LISTEN ] && ((service == want)) && exit 0
		done < <("$cepmctl" list)
		exit 1
	fi
	# The stock rdma_cm: its listening ID on a device, as the rdma tool lists it.
	rdma res show cm_id 2>/dev/null | grep -Eq "state LISTEN ps $ps .*src-addr [^ ]*:$port( |$)"
	;;
said)
	grep -Eqs -- "$3" "$dir/$2"
	;;
finish)
	name=$2 secs=$3
	pid=$(pid_of "$name")
	[ "${4:-}" != stop ] || kill -TERM -- "-$pid" 2>/dev/null || :
	for _ in $(seq $((secs * 5))); do [ -s "$dir/$name.rc" ] && break; sleep 0.2; done
	if [ ! -s "$dir/$name.rc" ]; then
		kill -KILL -- "-$pid" 2>/dev/null || :
		cat "$dir/$name" 2>/dev/null || :
		echo "side.sh: $name still running after $secs s more: killed"
		exit 124
	fi
	cat "$dir/$name"
	rc=$(cat "$dir/$name.rc")
	# A server stopped on purpose has not failed: timeout passes the TERM on, and returns
	# the command's 143 (or 124 if its own limit came first).
	if [ "${4:-}" = stop ] && { [ "$rc" = 124 ] || [ "$rc" = 143 ]; }; then rc=0; fi
	exit "$rc"
	;;
*)
	echo "side.sh: unknown command $1" >&2
	exit 2
	;;
esac
