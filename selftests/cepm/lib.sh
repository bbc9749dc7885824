# SPDX-License-Identifier: GPL-2.0
# Shared helpers for cepm's selftests.  Source it; KTAP output through the kernel's own helpers.

: "${CEPM_ROOT:?run the selftests through scripts/vm (it sets CEPM_ROOT)}"
: "${CEPM_KDIR:?run the selftests through scripts/vm (it sets CEPM_KDIR)}"
. "$CEPM_KDIR/tools/testing/selftests/kselftest/ktap_helpers.sh"

# Each result is preceded by the time it took since the previous one (or since the test began),
# so that a slow run's log shows which step its time went to.  Wraps the helpers' internal
# printer, which every ktap_test_* result goes through.
CEPM_LAST_RESULT_US=${EPOCHREALTIME//[!0-9]/}
declare -F __ktap_test >/dev/null || { echo "Bail out! ktap_helpers.sh has no __ktap_test"; exit 1; }
CEPM_KTAP_PRINTER=$(declare -f __ktap_test)
eval "ktap_print_result_line() ${CEPM_KTAP_PRINTER#*$'\n'}"
unset CEPM_KTAP_PRINTER
__ktap_test() {
	local now_us=${EPOCHREALTIME//[!0-9]/}
	local ms=$(((now_us - CEPM_LAST_RESULT_US) / 1000))
	((ms >= 0)) || ms=0 # the wall clock stepped back
	CEPM_LAST_RESULT_US=$now_us
	printf '# %d.%d s since the previous result\n' $((ms / 1000)) $((ms % 1000 / 100))
	ktap_print_result_line "$@"
}

CEPMCTL=${CEPMCTL:-$CEPM_ROOT/target/release/cepmctl}
# CEPM_KO, the cepm.ko to load, comes from scripts/vm (the one built for the running kernel).
RXE_DEV=${RXE_DEV:-rxe0}
RXE_NETDEV=${RXE_NETDEV:-veth0}

# ktap_check DESCRIPTION CMD...: one KTAP result from CMD's exit status.  Unlike the kernel's
# ktap_test_result it keeps CMD's arguments intact (no word splitting).
ktap_check() {
	local description=$1
	shift
	if "$@"; then
		ktap_test_pass "$description"
	else
		ktap_test_fail "$description"
	fi
}

# A process start costs the TCG guest about 0.1 s (docs/design.md), so the polls below start
# none of their own.  A pipe that nobody writes to, held open for reading and writing: `read -t`
# on it is a sleep inside the shell.
exec {CEPM_NAP_FD}<> <(:)
# nap SECONDS: sleep for SECONDS (fractions too) without a `sleep` process.
nap() { read -rt "$1" -u "$CEPM_NAP_FD" _ || :; }

# file_has REGEX FILE: a line of FILE matches the extended regular expression REGEX (read by the
# shell, not by grep: a probe for wait_until).  False while FILE does not exist.
file_has() {
	local line
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line =~ $1 ]] && return 0
	done 2>/dev/null <"$2"
	return 1
}

# wait_until SECONDS CMD...: poll CMD every 50 ms until it succeeds; fail after SECONDS. CMD is
# run afresh on each poll, so it must read what it tests itself: `wait_until 5 test "$(tx REJ)"
# = 3` would test one value, read before the wait (selftests/check-waits.sh refuses it).
# Giving up is said in the log, for the many waits whose failure the next check reports
# differently, or not at all; so is a wait of 3 s or more, to show where a slow run's time went.
# Both go to stderr, which run.sh logs with stdout: a function that waits may give its answer
# through $(...), and the report must not become part of it (check-waits.sh).
wait_until() {
	local limit=$1 start=$SECONDS deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		if [ $SECONDS -ge $deadline ]; then
			echo "# wait_until: still false after $limit s: $*" >&2
			return 1
		fi
		nap 0.05
	done
	[ $((SECONDS - start)) -lt 3 ] || echo "# wait_until: true after $((SECONDS - start)) s: $*" >&2
}

cepm_loaded() { [ -d /sys/module/cepm ]; }

# tx ATTR / rx ATTR: how many ATTR MADs (REQ, REJ, DREP, ...) cepm has sent / received on
# $RXE_DEV port 1.
tx() { "$CEPMCTL" tx-count "$RXE_DEV" 1 "$1"; }
rx() { "$CEPMCTL" rx-count "$RXE_DEV" 1 "$1"; }
# Probes for wait_until: counter_is tx|rx ATTR N, that count is N; counter_reaches tx|rx ATTR N,
# it is at least N.
counter_is() { [ "$("$1" "$2")" = "$3" ]; }
counter_reaches() { [ "$("$1" "$2")" -ge "$3" ]; }
# mad_barrier: returns once cepm has handled every MAD sent to rxe0 before it. MADs are handled
# in order, so once a marker (a DREP nobody answers) is counted, those before it are done with.
mad_barrier() {
	local n
	n=$(rx DREP)
	"$CEPMCTL" send-mad "$RXE_DEV" 1 DREP --local-comm-id 0x7e57 --remote-comm-id 0x7e57 &&
		wait_until 10 counter_reaches rx DREP $((n + 1))
}

# send_req_counted ARGS...: a forged REQ (cepmctl send-mad $RXE_DEV 1 REQ ARGS...), sent again
# unchanged, as a client resends it, while cepm has not counted it: rxe can drop a MAD on a busy
# host, and a REQ that never arrived says nothing about cepm. Three sends at most, 5 s apart;
# says so on stderr and returns 1 if none arrived.
send_req_counted() {
	local n attempt
	n=$(rx REQ)
	for attempt in 1 2 3; do
		"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ "$@" || return
		wait_until 5 counter_reaches rx REQ $((n + 1)) 2>/dev/null && return 0
		echo "# send_req_counted: cepm has not counted REQ send $attempt ($*)" >&2
	done
	return 1
}

# established_ceps: how many CEPs cepm lists in ESTABLISHED.
established_ceps() { "$CEPMCTL" list | awk '$2 == "ESTABLISHED"' | wc -l; }
# hold_pair SERVICE_ID OUT: a CM-only connection, both ends holding it until their next event
# (accept on the topology's server, after topology_up; loopback on rxe0 otherwise, and connect
# to it, both --hold, in the background, writing OUT.accept and OUT.connect). Returns once both
# are ESTABLISHED, with HELD_ACTIVE and HELD_PASSIVE set to the active and passive comm IDs
# (empty if the connection did not come up) and HELD_PIDS to the two processes.
hold_pair() {
	"${SERVER[@]}" "$CEPMCTL" accept --device "${SERVER_DEV:-$RXE_DEV}" --service-id "$1" --cm-only --hold \
		--timeout-ms 60000 >"$2.accept" 2>&1 &
	HELD_PIDS=($!)
	wait_until 10 file_has '^accept: listening' "$2.accept"
	"$CEPMCTL" connect --service-id "$1" --cm-only --hold --timeout-ms 60000 "${TO_SERVER[@]}" \
		>"$2.connect" 2>&1 &
	HELD_PIDS+=($!)
	wait_until 20 pair_held "$2"
	local ids='s/.*comm IDs: ours \(0x[0-9a-f]*\), the peer.s \(0x[0-9a-f]*\).*/'
	HELD_ACTIVE=$(sed -n "${ids}\1/p" "$2.connect")
	HELD_PASSIVE=$(sed -n "${ids}\2/p" "$2.connect")
}
pair_held() { file_has 'comm IDs: ours' "$1.connect" && file_has 'in ESTABLISHED' "$1.accept"; }

# `cepmctl ports` starts with "cepm ABI A, P managed port(s), C CEP(s)": matched by the shell
# (one process start per probe, not a pipeline's two or three).
# ports_summary: reads it; BASH_REMATCH[1] is then P, BASH_REMATCH[2] C.
ports_summary() {
	local ports
	ports=$("$CEPMCTL" ports) && [[ $ports =~ ^cepm\ ABI\ [0-9]+,\ ([0-9]+)\ managed\ port\(s\),\ ([0-9]+)\ CEP ]]
}
# Number of ports cepm manages right now.
managed_ports() { ports_summary && echo "${BASH_REMATCH[1]}"; }

# Connection endpoints alive in the module, all processes together.
live_ceps() { ports_summary && echo "${BASH_REMATCH[2]}"; }

ceps_are() { ports_summary && [ "${BASH_REMATCH[2]}" = "$1" ]; }

port_listed() {
	local ports
	ports=$("$CEPMCTL" ports) && [[ $'\n'$ports =~ $'\n'"$1 port $2 " ]]
}
port_not_listed() { ! port_listed "$@"; }

# list_has_state STATE [SERVICE_ID]: `cepmctl list` shows a CEP in STATE (its second column),
# for SERVICE_ID (its third, compared as a number) if one is given.
list_has_state() {
	local id state service
	while read -r id state service _; do
		[ "$state" = "$1" ] && { [ $# -lt 2 ] || ((service == $2)); } && return 0
	done < <("$CEPMCTL" list)
	return 1
}
# backlog_of SERVICE_ID: how many requests wait unclaimed on the listener for SERVICE_ID (the
# last column of its `cepmctl list` line); nothing if no CEP listens there.
backlog_of() {
	local state service waiting
	while read -r _ state service _ _ waiting; do
		[ "$state" = LISTEN ] && ((service == $1)) && echo "$waiting"
	done < <("$CEPMCTL" list)
}

# dmesg lines logged since mark_dmesg. The mark is the last line's timestamp, not a line
# count: once the ring buffer is full (as a KASAN run fills it), each new line pushes out the
# oldest and the count stays put. A line logged in the same microsecond as the mark's is missed.
# DMESG_STAMP, awk: t becomes the timestamp of the line, or of the record a continuation line
# (which has none) belongs to. Kept as text: awk would print a number to 6 digits.
DMESG_STAMP='match($0, /^\[ *[0-9]+\.[0-9]+\]/) { t = substr($0, 2, RLENGTH - 2) }'
mark_dmesg() { DMESG_MARK=$(dmesg | awk "$DMESG_STAMP END { print t }"); }
dmesg_since_mark() { dmesg | awk -v mark="$DMESG_MARK" "$DMESG_STAMP t + 0 > mark + 0"; }

# A second "host": veth1 moved into network namespace $PEER_NS with 10.77.0.2/24 and rxe1 on
# it, managed by cepm like rxe0.  peer_ns_down puts everything back (veth1 must come home
# before the namespace goes: deleting it there would delete veth0 too).
PEER_NS=cepm_peer
peer_has_gid() { grep -qs 'ffff:0a4d:0002' /sys/class/infiniband/rxe1/ports/1/gids/*; }
# Two-host tests make and unmake the peer tens of times a run, and under TCG each process costs
# 0.1 to 0.2 s: each `ip -batch` below does the work of several `ip` commands (its `netns exec`
# lines fork a child, with no new ip to load).
peer_ns_create() {
	[ -d /sys/module/ib_uverbs ] || modprobe ib_uverbs
	# veth1 keeps its MAC address in the namespace; read it here, where sysfs shows it.
	PEER_MAC=
	read -r PEER_MAC </sys/class/net/veth1/address &&
	printf '%s\n' "netns add $PEER_NS" "link set veth1 netns $PEER_NS" | ip -batch - &&
	printf '%s\n' 'addr add 10.77.0.2/24 dev veth1' 'link set veth1 up' 'link set lo up' \
		"netns exec $PEER_NS rdma link add rxe1 type rxe netdev veth1" | ip -n $PEER_NS -batch - &&
	wait_until 20 peer_has_gid
}
peer_ns_up() { peer_ns_create && wait_until 20 port_listed rxe1 1; }
# Fixed neighbour entries on both ends of the veth pair.  cepmctl is handed the peer's MAC, as
# rdma_cm's address resolution would be, but rxe sends through the IP stack, which resolves the
# neighbour again by ARP.  On a lossy link each lost ARP exchange costs about a second, and two
# outlast a short REQ retry budget while the REQs wait in the neighbour queue: a test of the
# CM's retries fixes the entries so that it measures the CM and not ARP.
peer_neighbours_fixed() {
	local mac0
	read -r mac0 </sys/class/net/veth0/address &&
	printf '%s\n' "neigh replace 10.77.0.2 lladdr $PEER_MAC dev veth0 nud permanent" \
		"netns exec $PEER_NS ip neigh replace 10.77.0.1 lladdr $mac0 dev veth1 nud permanent" |
		ip -batch -
}
peer_ns_down() {
	# First the fixed entry (peer_neighbours_fixed), if any: it would outlive the peer, and
	# while veth0 has no carrier below, rxe's sends through it would fail (docs/interop.md).
	# -force: each step is tried whatever the one before did, as after a half-made peer.
	ip neigh del 10.77.0.2 dev veth0 2>/dev/null
	rdma link delete rxe1 2>/dev/null
	printf '%s\n' "netns exec $PEER_NS ip link set veth1 netns 1" "netns del $PEER_NS" \
		'link set veth1 up' | ip -force -batch - 2>/dev/null
	[ -e /sys/class/net/veth1 ]
}

# The stock Linux CM as the second host: cepm reloaded to manage rxe0 alone (cepm.devices),
# the stock stack loaded (rdma_ucm pulls in rdma_cm and ib_cm), and rxe1 in namespace
# $PEER_NS, where ib_cm owns the CM class.  stock_down restores the usual guest.
# TO_STOCK: cepmctl's arguments to reach the stock host in rdma_cm's dialect.
stock_up() {
	rmmod cepm && insmod "$CEPM_KO" devices="$RXE_DEV" &&
	modprobe rdma_ucm &&
	peer_ns_create &&
	port_not_listed rxe1 1 &&
	wait_until 20 test -d /sys/class/infiniband/rxe1 &&
	TO_STOCK=(--device rxe0 --rdma-cm --peer-ip 10.77.0.2 --peer-mac "$PEER_MAC" --timeout-ms 30000)
}
# rdma_cm port spaces, for ip_service_id.
TCP=0x0106
UDP=0x0111
# The start of an interop test: root, the KTAP header, the tools it runs (else it is skipped),
# and a cleanup on exit that stops its background jobs and restores the usual guest ($out is
# the test's prefix for files).
interop_begin() {
	need_root
	ktap_print_header
	local tool
	for tool; do
		command -v "$tool" >/dev/null || { ktap_skip_all "$tool missing"; exit "$KSFT_SKIP"; }
	done
	trap 'kill $(jobs -p) 2>/dev/null; wait; tc qdisc del dev veth0 root 2>/dev/null; ipv6_down; stock_down; rm -f "$out".*' EXIT
}
# The peer namespace as a command prefix: "${PEER[@]}" CMD & leaves $! on CMD itself (ip
# execs it), so the test can signal it.
PEER=(ip netns exec "$PEER_NS")
# The stock rdma-core tools the interop tests run.
STOCK_TOOLS=(ucmatose rdma_server rdma_client cmtime rping udaddy)
# stock_listens PORT: a stock tool listens on PORT (they print nothing when ready).
stock_listens() {
	local line
	while IFS= read -r line; do
		[[ $line == *"state LISTEN"* && $line == *":$1 "* ]] && return 0
	done < <("${PEER[@]}" rdma resource show cm_id)
	return 1
}
# A peer that never answers: 10.77.0.98, whose fixed neighbour entry (baseline_silent_peers)
# sends its frames to a MAC no one has. cepmctl's MAC is not used: the module takes the
# neighbour's.
NOWHERE=(--peer-ip 10.77.0.98 --peer-mac 02:00:00:00:00:98)
# cm_connect NAME SERVICE_ID DEVICE PEER_IP PEER_MAC TIMEOUT_MS: a CM-only `cepmctl connect`
# from DEVICE to PEER_IP; its output in $out.NAME, shown; its exit status returned.
cm_connect() {
	"$CEPMCTL" connect --service-id "$2" --cm-only --device "$3" --peer-ip "$4" \
		--peer-mac "$5" --timeout-ms "$6" >"$out.$1" 2>&1
	local rc=$?
	show_file "# $1: " "$out.$1"
	return $rc
}
# forged_rej NAME SEND_MAD_ARGS...: a CEP of ours in REQ_SENT to nowhere (10.77.0.98), then
# a REQ forged with SEND_MAD_ARGS from its comm ID, which ib_umad loops back to rxe0: the REJ
# it gets goes to that CEP, whose owner prints its reason. Prints the reason ("none" if
# none); the owner's output is $out.NAME.
req_sent_ids() { "$CEPMCTL" list | awk '$2 == "REQ_SENT" { print $1 }' | sort; }
forged_rej() {
	local name=$1 before id nowhere=("${NOWHERE[@]}")
	shift
	before=$(req_sent_ids)
	"$CEPMCTL" connect --service-id 0x0000000001064e7b --cm-only --timeout-ms 30000 "${nowhere[@]}" \
		>"$out.$name" 2>&1 &
	new_id() { comm -13 <(echo "$before") <(req_sent_ids) | grep -q .; }
	wait_until 20 new_id
	id=$(comm -13 <(echo "$before") <(req_sent_ids) | head -1)
	"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --local-comm-id "$id" "$@"
	got() { file_has 'got REJ_RECEIVED' "$out.$name"; }
	wait_until 10 got
	show_files "$out.$name" >&2
	sed -n 's/.*got REJ_RECEIVED (status \([0-9]*\)).*/\1/p' "$out.$name" | grep . || echo none
}
# ip_service_id PORT_SPACE PORT: rdma_cm's service ID, e.g. ip_service_id 0x0106 7471 (TCP).
ip_service_id() { printf '0x%016x' $((($1 << 16) + $2)); }
# cepm_listens PORT [PORT_SPACE]: a CEP listens on rdma_cm's service ID for PORT (TCP by
# default); a tool over cepm's library is ready. The service ID column is compared whole, as a
# number (cepmctl list prints it unpadded, ip_service_id padded).
cepm_listens() { list_has_state LISTEN "$(ip_service_id "${2:-$TCP}" "$1")"; }
# IPv6: ULA addresses (no duplicate detection to wait for), fd77::1 on veth0 and fd77::2 on
# veth1; each gives its rxe device a RoCE v2 GID.
ADDR6_LOCAL=fd77::1 ADDR6_PEER=fd77::2
has_gid() { grep -qs "$2" /sys/class/infiniband/"$1"/ports/1/gids/*; }
# ipv6_up [PREFIX...]: fd77::1 on veth0 and, given the peer's command prefix (SERVER or
# PEER), fd77::2 on its veth1; then until their GIDs are in rxe0's and rxe1's tables.
ipv6_up() {
	ip addr add $ADDR6_LOCAL/64 dev veth0 nodad &&
		wait_until 20 has_gid rxe0 fd77:0000:0000:0000:0000:0000:0000:0001 || return 1
	[ $# -gt 0 ] || return 0
	"$@" ip addr add $ADDR6_PEER/64 dev veth1 nodad &&
		wait_until 20 has_gid rxe1 fd77:0000:0000:0000:0000:0000:0000:0002
}
# veth1's address goes with the peer namespace; veth0's, here.
ipv6_down() { ip addr del $ADDR6_LOCAL/64 dev veth0 2>/dev/null || true; }
# tool_pair NAME READY -- SERVER... -- CLIENT...: a server and its client, each a command line
# with its prefixes (namespace, library, timeout). SERVER runs in the background; once READY
# (a command line split on blanks, e.g. "cepm_listens 7174") succeeds, within 30 s, CLIENT
# runs; then the server is waited for, or stopped first if $stop_server is 1 (cmtime's never
# exits), or, if $linger is set, each end gets that long after the other has exited
# (wait_pair). Exit codes in $crc and $src; output in $out.NAME-c and $out.NAME-s, the last
# $show_lines (3) lines of each shown, or all of a side that failed: the tools' errors go to
# stderr, ahead of their buffered stdout, so the last lines would not hold them.
tool_pair() {
	local name=$1 ready=$2 server=()
	[ "$3" = -- ] || ktap_exit_fail_msg "tool_pair $name: no -- before the server"
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("$1"); shift; done
	[ $# -gt 1 ] || ktap_exit_fail_msg "tool_pair $name: no -- before the client"
	shift
	"${server[@]}" >"$out.$name-s" 2>&1 &
	spid=$!
	# The client runs either way; if it then fails, wait_until's line says why.
	wait_until 30 $ready
	if [ -n "${linger:-}" ]; then
		"$@" >"$out.$name-c" 2>&1 &
		wait_pair $!
	else
		"$@" >"$out.$name-c" 2>&1
		crc=$?
		[ "${stop_server:-0}" = 0 ] || kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		src=$?
	fi
	# A server stopped on purpose has not failed.
	local server_rc=$src
	[ "${stop_server:-0}" = 0 ] || server_rc=0
	show_side "$name server" "$out.$name-s" "$server_rc"
	show_side "$name client" "$out.$name-c" "$crc"
}
# wait_pair CLIENT_PID: waits for the client and the server ($spid) of tool_pair; once one
# has exited, the other has $linger seconds (times CEPM_LIMIT_SCALE) more, and is then killed
# and counted as timed out (124), as its own timeout would have, sooner. For pairs whose ends
# exit together, so that a hung end costs seconds rather than its whole timeout. If the end
# that exited printed a line matching $void_if (grep's pattern), the attempt is void whatever
# the other does, and the other is stopped at once.
wait_pair() {
	local cpid=$1 grace=$((linger * ${CEPM_LIMIT_SCALE:-1})) deadline='' killed='' why void
	while ! exited "$cpid" || ! exited "$spid"; do
		if [ -z "$deadline" ] && { exited "$cpid" || exited "$spid"; }; then
			deadline=$((SECONDS + grace))
			why="was still running $grace s after the other end had exited: stopped"
			# grep's status is 2 when a file is missing, even with a match in the other.
			void=
			[ -z "${void_if:-}" ] || void=$(grep -ohs -m1 -- "$void_if" "$out.$name-c" "$out.$name-s")
			if [ -n "$void" ]; then
				deadline=$SECONDS
				why="was stopped at once: the other end printed \"${void%%$'\n'*}\" and exited"
			fi
		elif [ -n "$deadline" ] && [ "$SECONDS" -ge "$deadline" ]; then
			exited "$cpid" || killed=client
			exited "$spid" || killed=server
			echo "# $name: the $killed $why"
			kill "$cpid" "$spid" 2>/dev/null
			break
		fi
		nap 0.1
	done
	wait "$cpid" 2>/dev/null
	crc=$?
	wait "$spid" 2>/dev/null
	src=$?
	case $killed in
	client) crc=124 ;;
	server) src=124 ;;
	esac
}
# show_side LABEL FILE RC: FILE's last $show_lines (3) lines if RC is 0, else all of it.
show_side() {
	if [ ! -e "$2" ]; then
		echo "# $1: (no output)"
	elif [ "$3" = 0 ]; then
		show_file "# $1: " "$2" "${show_lines:-3}"
	else
		show_file "# $1: " "$2"
	fi
}
# show_files FILE...: every line of each FILE as a KTAP comment ("# LINE"), in order.
show_files() {
	local f
	for f; do
		if [ -e "$f" ]; then show_file '# ' "$f"; else echo "# ($f: missing)"; fi
	done
}
# show_file PREFIX FILE [LAST]: FILE's lines (its LAST lines only, if given), each after PREFIX;
# the shell's `sed "s/^/PREFIX/" FILE | tail -n LAST`, without their two processes.
show_file() {
	local lines=() i=0
	mapfile -t lines 2>/dev/null <"$2"
	[ $# -lt 3 ] || [ "${#lines[@]}" -le "$3" ] || i=$((${#lines[@]} - $3))
	for (( ; i < ${#lines[@]}; i++)); do printf '%s%s\n' "$1" "${lines[i]}"; done
}
# capture_mads FILE ATTR: how many CM MADs with attribute ATTR (four hex digits, e.g. 0016 for
# DREP) dumpcap's capture FILE holds so far.  dumpcap reads packets a while after they cross the
# link (its socket hands them over in blocks, every 250 ms at most) and loses what it has not
# read when it is stopped: a test waits on capture_has_mads before it stops dumpcap.  A CM MAD
# starts 01 07 02 03 00000000 (base version 1, class 7, version 2, method Send, status and
# class-specific 0), then its TID, then ATTR.
capture_mads() {
	local size
	size=$(stat -c %s "$1" 2>/dev/null) && [ "$size" -gt 0 ] || { echo 0; return; }
	od -An -v -tx1 -w"$size" "$1" | awk -v attr="$2" '
		{
			gsub(/ /, "")
			# What follows each header start: the TID (16 digits), then the attribute. A part
			# that starts at an odd digit is a match across two bytes, not a header.  (Bash
			# pattern removal and substitution are quadratic: 18 s on one capture.)
			parts = split($0, part, "0107020300000000")
			at = length(part[1])
			for (i = 2; i <= parts; i++) {
				if (at % 2 == 0 && substr(part[i], 17, 4) == attr) n++
				at += 16 + length(part[i])
			}
		}
		END { print n + 0 }'
}
# capture_has_mads FILE ATTR N: FILE holds at least N of them (a probe for wait_until).
capture_has_mads() { [ "$(capture_mads "$1" "$2")" -ge "$3" ]; }
# rxe_counter DEV NAME: port 1 of rxe device DEV's hardware counter NAME (every rxe is
# visible from every namespace), empty if it has none.
rxe_counter() {
	local v=
	read -r v 2>/dev/null <"/sys/class/infiniband/$1/ports/1/hw_counters/$2"
	echo "$v"
}
# rxe (7.3) can lose the ACK of a SEND, two ways (docs/interop.md): the receiver's do_complete
# posts the CQE and then sends no ACK if the QP has meanwhile gone to ERR, which is what the
# application does on that CQE when it disconnects at once (rdma_client, rdma_server); and
# rxe_requester marks a WQE pending only after rxe_xmit_packet, so the completer's get_wqe can
# drop an ACK that comes back first. A retransmission makes up for it only while the other
# end's QP is alive, and at retry count 7 rxe_completer retransmits for ever: the sender hangs.
# The stock tools on the stock CM hang the same way. Either end's last SEND can be the one.
# rxe_lost_ack_mark CLIENT_DEV SERVER_DEV before a tool_pair; after it,
# check_unless_lost_ack DESC NAME CLIENT_END SERVER_END CMD... is ktap_check DESC CMD...,
# except that this failure, and no other, is an expected one: one end hung until its timeout
# (or until tool_pair stopped it, $linger after the other) while the other printed its END
# line and exited 0, the hung end's rxe retransmitted, and no retransmission met a live QP
# (the other end's rxe saw no duplicate request).
rxe_lost_ack_mark() {
	lost_ack_devs=("$1" "$2")
	lost_ack_retries=("$(rxe_counter "$1" completer_retry_err)" "$(rxe_counter "$2" completer_retry_err)")
	lost_ack_duplicates=("$(rxe_counter "$1" duplicate_request)" "$(rxe_counter "$2" duplicate_request)")
}
rxe_lost_ack() {
	local name=$1 hung other retries duplicates
	if [ "$crc" = 124 ] && [ "$src" = 0 ] && grep -q "$3" "$out.$name-s"; then
		hung=0 other=1
	elif [ "$src" = 124 ] && [ "$crc" = 0 ] && grep -q "$2" "$out.$name-c"; then
		hung=1 other=0
	else
		return 1
	fi
	retries=$(($(rxe_counter "${lost_ack_devs[hung]}" completer_retry_err) - lost_ack_retries[hung]))
	duplicates=$(($(rxe_counter "${lost_ack_devs[other]}" duplicate_request) - lost_ack_duplicates[other]))
	echo "# $name: the hung $([ $hung = 0 ] && echo client || echo server)'s" \
		"${lost_ack_devs[hung]} retransmitted $retries time(s), the other end's" \
		"${lost_ack_devs[other]} saw $duplicates duplicate request(s)"
	[ "$retries" -gt 0 ] && [ "$duplicates" = 0 ]
}
check_unless_lost_ack() {
	local desc=$1 name=$2 client_end=$3 server_end=$4
	shift 4
	if ! "$@" && rxe_lost_ack "$name" "$client_end" "$server_end"; then
		ktap_test_xfail "$desc: rxe lost an ACK (docs/interop.md)"
	else
		ktap_check "$desc" "$@"
	fi
}
# UCX 1.13 asserts that the IBV_EVENT_QP_LAST_WQE_REACHED of a QP it is closing comes once
# (uct_ib_device_async_event_dispatch), and rxe raises it again each time its responder runs on
# a QP in ERR with an SRQ (flush_recv_queue in rxe_resp.c), as a packet from the peer makes it.
# An end then aborts as it closes its endpoint, over the stock CM as over cepm
# (docs/interop.md). again_if_ucx_aborted NAME OK CMD...: runs CMD (a tool_pair named NAME),
# and again, up to 3 times in all, while `OK NAME` fails and an end printed that assertion; an
# attempt must pass whole, and any other failure is final.
UCX_LAST_WQE_ABORT="ib_device\.c:[0-9]*  *Assertion .wait_ctx->cb_id == (-1). failed"
again_if_ucx_aborted() {
	local name=$1 ok=$2 attempt=1
	shift 2
	"$@"
	while ! "$ok" "$name" && [ $attempt -lt 3 ] &&
		grep -qs -- "$UCX_LAST_WQE_ABORT" "$out.$name-c" "$out.$name-s"; do
		attempt=$((attempt + 1))
		echo "# $name: UCX aborted on rxe's repeated LAST_WQE_REACHED, not the CM's doing: attempt $attempt of 3"
		"$@"
	done
}
# perftest's attempts that fail for perftest's own reasons, whatever the CM, and are run again
# (each attempt must still pass whole, and any other failure is final):
# - "Can't produce a report": perftest measures its CPU clock against gettimeofday before it
#   reports (sample_get_cpu_mhz, src/get_clock.c) and exits 1 when the two correlate too poorly
#   (r^2 < 0.9), as they can in a busy TCG guest, after the data has moved;
# - "Event: RDMA_CM_EVENT_REJECTED; error: 8.": with -R, the server listens for the data
#   connection only after a handshake on its first listener, so a client that connects in
#   between is rejected, reason 8 (no listener), as the stock CM rejects it too; perftest
#   4.5-0.17's retry then fails (over rdma-core's librdmacm it crashes: docs/rdmacm.md).
#   rdmacm_tools check 11 makes it happen on purpose, and checks the client's clean exit. Void
#   only if the client did connect before the server's second rdma_listen was done, as both
#   ends' cm_clock.so says (early_client): a REJ after it is the CM's, and fails.
# The other end then waits for it until its timeout, or, in a pair with a $linger, is
# stopped at once ($void_if).
PERFTEST_VOID="Can't produce a report\|Event: RDMA_CM_EVENT_REJECTED; error: 8\."
# perftest's ends run with cm_clock.so preloaded, for early_client: "${CM_CLOCK[@]}" TOOL ARGS.
CM_CLOCK=(env LD_PRELOAD="$CEPM_ROOT/out/selftests/cm_clock.so")
# early_client NAME: whether pair NAME's client, rejected with status 8, had started the
# rdma_connect that was rejected before its server's second rdma_listen was done (or the server
# never listened again), by cm_clock.so's lines in the two outputs.
early_client() {
	local connected listened
	connected=$(awk '/^cm_clock: connect [0-9]+ start / { t = $NF }
		/^cm_clock: rejected status 8 / { print t; exit }' "$out.$1-c" 2>/dev/null)
	listened=$(awk '/^cm_clock: listen 2 done / { print $NF; exit }' "$out.$1-s" 2>/dev/null)
	[ -n "$connected" ] || return 1
	[ -z "$listened" ] || awk -v c="$connected" -v l="$listened" 'BEGIN { exit !(c < l) }'
}
# again_if_void NAME CMD...: runs CMD (a tool_pair named NAME), and again, up to
# $PERFTEST_ATTEMPTS times in all, while either end printed one of those. 3 by default, as a
# busy TCG host can fail the calibration twice in a row. CEPM_PERFTEST_ATTEMPTS sets the
# number: the KASAN lane gives 6, as under KASAN an end can fail its calibration in most
# attempts of a pair, several in a row (r^2 0.53 to 0.84).
PERFTEST_ATTEMPTS=${CEPM_PERFTEST_ATTEMPTS:-3}
again_if_void() {
	local name=$1 attempt=1 void_if=$PERFTEST_VOID why
	shift
	"$@"
	while [ "$crc$src" != 00 ] && [ $attempt -lt $PERFTEST_ATTEMPTS ] &&
		why=$(grep -ohs -m1 -- "$void_if" "$out.$name-c" "$out.$name-s"; true) && [ -n "$why" ]; do
		if [[ $why == *REJECTED* ]] && ! early_client "$name"; then
			echo "# $name: its client was rejected (status 8) though it connected after its server listened, or cm_clock.so did not say: not void"
			break
		fi
		attempt=$((attempt + 1))
		echo "# $name: perftest printed \"${why%%$'\n'*}\", not the CM's doing: attempt $attempt of $PERFTEST_ATTEMPTS"
		"$@"
	done
}
# exited PID...: every PID has exited. A zombie has, though kill -0 still succeeds on it.
exited() {
	local p st
	for p; do
		st=
		[ -e "/proc/$p" ] && read -r _ _ st _ 2>/dev/null <"/proc/$p/stat"
		[ -z "$st" ] || [ "$st" = Z ] || return 1
	done
}
stock_down() {
	# A stock tool still running holds rdma_ucm; none may outlive its test.
	# Found by name here rather than by pkill: one pkill for all of them (a pattern of more than
	# 15 characters) works but warns that it matches nothing, and one each costs half a second
	# under TCG.
	local proc comm
	for proc in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$proc/comm" || continue
		[[ " ${STOCK_TOOLS[*]} " != *" $comm "* ]] || kill "${proc#/proc/}" 2>/dev/null
	done
	peer_ns_down
	# The stock tools may still be exiting, holding rdma_ucm for a moment.
	stock_cm_unloaded() { modprobe -r rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
	wait_until 20 stock_cm_unloaded
	rmmod cepm
	insmod "$CEPM_KO"
}

need_root() { [ "$EUID" = 0 ] || { ktap_skip_all "needs root"; exit "$KSFT_SKIP"; }; }
# need_library: LIB, cepm's librdmacm.so.1 as `make user` builds it, and OVER_CEPM, the prefix
# that runs a command over it (an array: "${OVER_CEPM[@]}" CMD & leaves $! on CMD's chain).
# Without the library the test fails.
need_library() {
	LIB=$CEPM_ROOT/out/rdmacm
	[ -f "$LIB/librdmacm.so.1" ] || ktap_exit_fail_msg "$LIB/librdmacm.so.1 is missing: make user"
	OVER_CEPM=(env LD_LIBRARY_PATH="$LIB")
}
# need_progs NAME...: the test programs that `make selftest-progs` builds into $progs; without
# one the test fails.
progs=$CEPM_ROOT/out/selftests
need_progs() {
	local prog
	for prog; do
		[ -x "$progs/$prog" ] || ktap_exit_fail_msg "$progs/$prog is missing: make selftest-progs"
	done
}

# Where the two ends of a test run (selftests/run.sh sets CEPM_TOPOLOGY from "test@topology"):
#  loopback   both on rxe0, the MADs looped back inside rxe (the default);
#  two-hosts  the server in namespace $PEER_NS on rxe1, everything crossing the veth pair.
# topology_up sets SERVER (a command prefix that runs on the server's host), SERVER_DEV and
# TO_SERVER (connect's arguments to reach the server); topology_down undoes it.
TOPOLOGY=${CEPM_TOPOLOGY:-loopback}
topology_up() {
	case $TOPOLOGY in
	loopback) SERVER=() SERVER_DEV=rxe0 TO_SERVER=() ;;
	two-hosts)
		peer_ns_up || return 1
		SERVER=(ip netns exec "$PEER_NS") SERVER_DEV=rxe1
		TO_SERVER=(--peer-ip 10.77.0.2 --peer-mac "$PEER_MAC")
		;;
	*) echo "unknown topology '$TOPOLOGY'" >&2; return 1 ;;
	esac
}
topology_down() { [ "$TOPOLOGY" = loopback ] || peer_ns_down; }
# on_server CMD...: CMD on the server's host.  Not for a background job: its job would be the
# function's subshell, and a kill would end that and leave CMD running; start one with
# `"${SERVER[@]}" CMD... &` instead (ip netns exec execs CMD), whose job is CMD itself.
on_server() { "${SERVER[@]}" "$@"; }

# Fault injection (cepm's debugfs): drop_rx ATTR N drops the next N CM MADs with attribute
# ATTR (e.g. 0x14 for RTU; 0 for any) that reach any port cepm manages.
CEPM_DEBUGFS=/sys/kernel/debug/cepm
drop_rx() {
	echo "$1" >$CEPM_DEBUGFS/drop_rx_attr && echo "$2" >$CEPM_DEBUGFS/drop_rx_count
}
# Read by the shell, not cat: they are polled.
rx_dropped() { local v; read -r v <$CEPM_DEBUGFS/rx_dropped && echo "$v"; }
rx_dropped_is() { [ "$(rx_dropped)" = "$1" ]; }
drops_pending() { local v; read -r v <$CEPM_DEBUGFS/drop_rx_count && echo "$v"; }
