# SPDX-License-Identifier: GPL-2.0
# Holders: helpers kept running in the background while a test tries things beside them
# (privileges.sh).  Sourced after the caller defines helper_as WHO, which sets the array
# HELPER_AS to the command that runs the helper as WHO, and $work, a directory for the fifos.
# A holder's stdin and stdout are fifos; it says "ready" once it holds what it was asked to,
# and lets go when its stdin is closed.  selftests/check-holders.sh checks these on the host.

declare -A HOLDER_PID=() HOLDER_IN=() HOLDER_OUT=()

# hold_start NAME WHO ARGS...: the helper as WHO in the background (in the cgroup
# $HOLDER_CGROUP if set), its stdin the fifo NAME.in (closing our end releases it) and its
# stdout NAME.out, which holder_says and holder_release read.  The helper closes every other
# descriptor it inherits: it must not keep another holder's stdin open.
hold_start() {
	local name=$1 who=$2 in=$work/$1.in out=$work/$1.out fd
	shift 2
	helper_as "$who" || return 1
	mkfifo "$in" "$out" || return 1
	(
		if [ -n "${HOLDER_CGROUP:-}" ]; then
			echo "$BASHPID" >"$HOLDER_CGROUP/cgroup.procs" || exit 2
		fi
		exec "${HELPER_AS[@]}" "$@"
	) <"$in" >"$out" &
	HOLDER_PID[$name]=$!
	# Each open waits for the other end's, in the order the subshell opens them.
	exec {fd}>"$in"
	HOLDER_IN[$name]=$fd
	exec {fd}<"$out"
	HOLDER_OUT[$name]=$fd
}

# holder_says NAME LINE: wait (30 s at most) until holder NAME says LINE; what it says before
# goes to the log.  False if it ends, or stays silent, first.
holder_says() {
	local name=$1 want=$2 line
	while IFS= read -r -t 30 -u "${HOLDER_OUT[$name]}" line; do
		[ "$line" = "$want" ] && return 0
		echo "# [$name] ${line#\# }"
	done
	ktap_print_msg "[$name] never said '$want' (it ended, or was silent for 30 s)"
	return 1
}

# holder_tell NAME LINE: a line on holder NAME's stdin; false if it has ended.  The write is
# made in a subshell that ignores SIGPIPE: a fifo with no reader raises it, and it would end
# the whole test before its EXIT trap ran.
holder_tell() {
	(
		trap '' PIPE
		echo "$2" >&"${HOLDER_IN[$1]}"
	) 2>/dev/null && return 0
	ktap_print_msg "[$1] could not be told '$2': it has ended"
	return 1
}

# hold NAME WHO ARGS...: hold_start, then wait for its "ready".
hold() { hold_start "$@" && holder_says "$1" ready; }

# holder_release NAME: close its stdin (it lets go and exits), log the rest of what it says
# (kept in $work/NAME.log too) and return its exit status.
holder_release() {
	local name=$1 pid=${HOLDER_PID[$1]:-} fd rc
	[ -n "$pid" ] || return 1
	fd=${HOLDER_IN[$name]}
	exec {fd}>&-
	fd=${HOLDER_OUT[$name]}
	# It exits at its stdin's EOF; one that does not is stopped.
	timeout 30 cat <&"$fd" >"$work/$name.log" || kill "$pid" 2>/dev/null
	exec {fd}<&-
	wait "$pid"
	rc=$?
	sed "s/^\(# \)\{0,1\}/# [$name] /" "$work/$name.log"
	unset "HOLDER_PID[$name]" "HOLDER_IN[$name]" "HOLDER_OUT[$name]"
	return $rc
}

# Every holder still running is stopped and waited for: none may outlive the test.
release_all() {
	local name
	for name in "${!HOLDER_PID[@]}"; do
		kill "${HOLDER_PID[$name]}" 2>/dev/null
		holder_release "$name" >/dev/null
	done
}
