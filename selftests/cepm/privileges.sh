#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# /dev/cepm for every user (docs/abi.md, "Privileges and limits").  The shipped udev rule
# makes the device 0666, and then what one user does cannot reach another's: a privileged
# port needs CAP_NET_BIND_SERVICE; a masked listen needs CAP_NET_ADMIN (it would claim
# service IDs no one has taken yet); another user's service IDs are theirs (CAP_NET_ADMIN may
# cover them with a masked listen, no one may take them over); LIST_CEPS and monitors show
# only the caller's user's CEPs (all with CAP_NET_ADMIN, and never another file's
# user_context); CONNECT starts from a RoCE v2 GID the port has; the module parameters bound
# what a file and a user hold, the uids of the user namespaces a user made included; what a
# user's calls allocate (CEPs, the REQs and SIDR_REQs they keep for their retries) is charged
# to their memory cgroup.
#
# The calls are made by out/selftests/privileges (privileges.c), run through setpriv as user A
# (uid 65534) or user B (uid 65533), with one ambient capability where a check says so, or as
# root.  What must stay in place while others try (a listener, CEPs, a monitor) is held by the
# helper in the background: its stdin and stdout are fifos, it says "ready" once it holds it,
# and lets go when its stdin is closed.  The trap stops every holder and the udevd it started,
# reloads cepm with its defaults if it had other limits, and puts /dev/cepm back to 0600.
. "$(dirname "$0")/lib.sh"
set -u
need_root
ktap_print_header

HELPER=$CEPM_ROOT/out/selftests/privileges
[ -x "$HELPER" ] || ktap_exit_fail_msg "$HELPER is missing: make selftest-progs"
ktap_set_plan 101

USER_A=65534
USER_B=65533
EXACT=0xffffffffffffffff
work=$(mktemp -d)

# --- Running the helper as someone ----------------------------------------------------------

# helper_as WHO: HELPER_AS becomes the command that runs the helper as WHO: root; a or b with no
# capability; a+CAP or b+CAP (e.g. b+net_admin) with that one, ambient so that it survives
# setpriv's exec of the helper; a@N or r@N, uid N of user A's or root's user namespace.
helper_as() {
	local who=$1 uid caps=(--inh-caps=-all)
	case $who in
	root) HELPER_AS=("$HELPER"); return 0 ;;
	a | a+*) uid=$USER_A ;;
	b | b+*) uid=$USER_B ;;
	# uid N of the user namespace user A made, or of root's (section m).
	a@* | r@*)
		local ns_pid=$USERNS_A_PID
		[ "${who%@*}" = a ] || ns_pid=$USERNS_ROOT_PID
		HELPER_AS=(nsenter --target "$ns_pid" --user --setuid "${who#*@}" --setgid "${who#*@}" "$HELPER")
		return 0
		;;
	*) echo "helper_as: no user '$who'" >&2; return 1 ;;
	esac
	case $who in
	*+*) caps=(--inh-caps="+${who#*+}" --ambient-caps="+${who#*+}") ;;
	esac
	HELPER_AS=(setpriv --reuid="$uid" --regid="$uid" --clear-groups "${caps[@]}" "$HELPER")
}

# as WHO ARGS...: one run of the helper as WHO; its exit status (0: the outcome expected).
as() {
	helper_as "$1" || return 2
	shift
	"${HELPER_AS[@]}" "$@"
}

# $CEPM_ROOT may lie under a directory other users cannot search (a home directory of mode
# 0700): then users A and B run a copy, from a directory of ours that every user can search.
if ! setpriv --reuid=$USER_A --regid=$USER_A --clear-groups test -x "$HELPER"; then
	ktap_print_msg "user A cannot run $HELPER: running a copy in $work"
	chmod 0755 "$work"
	install -m 0755 "$HELPER" "$work/privileges"
	HELPER=$work/privileges
fi

. "$(dirname "$0")/holders.sh"

# --- The guest around the test, and its restoration ----------------------------------------

RULES_DIR=/run/udev/rules.d
run_udev_existed=0
[ -d /run/udev ] && run_udev_existed=1
udevd_pid=
udevd_preexisting=0
limits_loaded=0
CG=/sys/fs/cgroup
CG_DIR=$CG/cepm-priv.$$
cg_mounted=0
cg_memory_enabled=0

# reload_cepm [PARAM=VALUE...]: cepm loaded again with these parameters and managing rxe0, its
# device open to all as the shipped rule makes it (the rule is out of udev's rules by then).
# A udevd may be running (virtme-ng starts one): it handles the reload's "add" uevent in its
# own time and gives /dev/cepm udev's default mode, 0600, so the mode is set once udevd has
# settled. LATE_RULE makes that udevd take a second over the event, so that it always comes
# late, as it can on a loaded machine. settle pings udevd first, and udevd answers a ping only
# after it has queued the uevents already sent (systemd's src/udev/udevd.c gives its control
# socket the idle priority), so the reload's "add" is among those settle waits for.
# (A rule, not `udevadm control --stop-exec-queue`: on the guest's systemd, events held that
# way are sometimes never run once the queue starts again, and settle times out.)
LATE_RULE=$RULES_DIR/89-cepm-late.rules
reload_cepm() {
	local udevd=0 rc=0
	if udevadm control --ping -t 2 2>/dev/null; then
		udevd=1
		mkdir -p $RULES_DIR &&
			echo 'ACTION=="add", SUBSYSTEM=="misc", KERNEL=="cepm", PROGRAM="/bin/sleep 1"' >$LATE_RULE &&
			udevadm control --reload || rc=1
	fi
	{ ! cepm_loaded || rmmod cepm; } && insmod "$CEPM_KO" "$@" &&
		wait_until 20 port_listed "$RXE_DEV" 1 || rc=1
	if [ $udevd = 1 ]; then
		# Scaled as every time limit is: udev takes minutes under KASAN.
		udevadm settle -t $((30 * ${CEPM_LIMIT_SCALE:-1})) || rc=1
		rm -f $LATE_RULE
		udevadm control --reload
	fi
	[ $rc = 0 ] && chmod 0666 /dev/cepm && mode_is 666
}

udevd_stop() {
	[ -n "$udevd_pid" ] || return 0
	udevadm control --exit -t 10 2>/dev/null
	kill "$udevd_pid" 2>/dev/null
	wait "$udevd_pid" 2>/dev/null
	udevd_pid=
}

cgroup_cleanup() {
	if [ -d "$CG_DIR" ]; then rmdir "$CG_DIR"; fi
	if [ $cg_memory_enabled = 1 ]; then
		echo -memory >$CG/cgroup.subtree_control && cg_memory_enabled=0
	fi
	if [ $cg_mounted = 1 ]; then
		umount $CG && cg_mounted=0
	fi
}

USERNS_A_PID=
USERNS_ROOT_PID=
cleanup() {
	release_all
	userns_cleanup
	udevd_stop
	rm -f $RULES_DIR/90-cepm.rules $LATE_RULE
	if [ $udevd_preexisting = 1 ]; then
		udevadm control --reload
	elif [ $run_udev_existed = 0 ]; then
		rm -rf /run/udev
	fi
	cgroup_cleanup
	# A check stopped half way may leave cepm dropping what it receives.
	[ ! -w $CEPM_DEBUGFS/drop_rx_count ] || drop_rx 0 0
	if [ $limits_loaded = 1 ]; then
		! cepm_loaded || rmmod cepm
		insmod "$CEPM_KO" && wait_until 20 port_listed "$RXE_DEV" 1
	fi
	# The module's own mode: the next test starts from the baseline.
	chmod 0600 /dev/cepm 2>/dev/null
	chown 0:0 /dev/cepm 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
# Stopped by the runner's time limit: the cleanup still runs.
trap 'exit 143' TERM

# --- a. The shipped udev rule ---------------------------------------------------------------

mode_is() {
	local mode
	mode=$(stat -c %a /dev/cepm) || return 1
	[ "$mode" = "$1" ] || { ktap_print_msg "/dev/cepm has mode $mode"; return 1; }
}

# The guest runs no udevd: start one with the shipped rule among its rules, replay the "add"
# event of /dev/cepm and wait (--settle) until it has been processed.
udev_rule_applies() {
	mkdir -p $RULES_DIR && cp "$CEPM_ROOT/udev/90-cepm.rules" $RULES_DIR/ || return 1
	if udevadm control --ping -t 5 2>/dev/null; then
		udevd_preexisting=1
		udevadm control --reload || return 1
	else
		SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-udevd >"$work/udevd.log" 2>&1 &
		udevd_pid=$!
		# It answers once its control socket is bound; the uevents come after that.
		udevd_answers() { udevadm control --ping -t 1 2>/dev/null; }
		if ! wait_until 30 udevd_answers; then
			show_file '# udevd: ' "$work/udevd.log"
			return 1
		fi
	fi
	udevadm trigger --settle --action=add /sys/class/misc/cepm && mode_is 666
}

ktap_check "/dev/cepm starts with the module's mode, 0600" mode_is 600
ktap_check "the shipped rule (udev/90-cepm.rules) makes /dev/cepm 0666" udev_rule_applies
# From here on the udevd started here is gone, the shipped rule is out of the rules of one the
# guest runs (reload_cepm waits for that one), and the device is 0666 whatever udev did, so
# that the checks below do not depend on the one above.
udevd_stop
rm -f $RULES_DIR/90-cepm.rules
[ $udevd_preexisting = 0 ] || udevadm control --reload
chmod 0666 /dev/cepm

# --- b. Every user may use it ---------------------------------------------------------------

ktap_check "user A opens /dev/cepm and creates a CEP" as a create 1 --expect ok

# --- c. Privileged ports: CAP_NET_BIND_SERVICE, as bind(2) ----------------------------------
# Service IDs of rdma_cm's IP port spaces: port space << 16 | port.

ktap_check "user A cannot listen on TCP port 80: EACCES" \
	as a listen 0x0000000001060050 $EXACT --expect EACCES
ktap_check "user A with CAP_NET_BIND_SERVICE listens on TCP port 80" \
	as a+net_bind_service listen 0x0000000001060050 $EXACT --expect ok
ktap_check "user A listens on TCP port 5001" \
	as a listen 0x0000000001061389 $EXACT --expect ok
ktap_check "user A cannot listen over the whole TCP port space, ports below 1024 included: EACCES" \
	as a listen 0x0000000001060000 0xffffffffffff0000 --expect EACCES
ktap_check "user A cannot listen on UDP port 53: EACCES" \
	as a listen 0x0000000001110035 $EXACT --expect EACCES
low_ports_of_ipoib_and_ib() {
	as a listen 0x0000000000020016 $EXACT --expect EACCES &&
		as a listen 0x00000000013f0016 $EXACT --expect EACCES
}
ktap_check "user A cannot listen on port 22 of the IPoIB or the IB port space: EACCES" \
	low_ports_of_ipoib_and_ib
ktap_check "user A listens on 0x0000000001070050, in no IP port space: no port is privileged" \
	as a listen 0x0000000001070050 $EXACT --expect ok

# --- d. Another user's exact listener --------------------------------------------------------

ktap_check "user A holds an exact listener on TCP port 5001 (0x1389)" \
	hold a_exact a listen 0x0000000001061389 $EXACT --expect ok --hold
ktap_check "user B, the same service ID and mask: EBUSY" \
	as b listen 0x0000000001061389 $EXACT --expect EBUSY
ktap_check "user B, a masked listen over it (ports 0x1300..0x13ff): EPERM" \
	as b listen 0x0000000001061300 0xffffffffffffff00 --expect EPERM
ktap_check "user B with CAP_NET_ADMIN may listen over it" \
	as b+net_admin listen 0x0000000001061300 0xffffffffffffff00 --expect ok
ktap_check "user A's own masked listen over its listener, with CAP_NET_ADMIN" \
	as a+net_admin listen 0x0000000001061300 0xffffffffffffff00 --expect ok
ktap_check "user B listens on the port next to it (0x1388)" \
	as b listen 0x0000000001061388 $EXACT --expect ok
holder_release a_exact

# --- d2. Listens scoped by address ------------------------------------------------------------
# A listen for an address takes the REQs to it from a wildcard or an unscoped listener of its
# service ID: not from another user's. Covering another user's listener is allowed: it keeps
# its REQs. One listener per address and per family's wildcard.

ktap_check "user A holds an IPv4 wildcard listener with AFONLY on TCP port 0x1390" \
	hold a_wild a listen 0x0000000001061390 $EXACT --addr 0.0.0.0 --afonly --expect ok --hold
ktap_check "user B, for 10.77.0.1 under it: EADDRINUSE" \
	as b listen 0x0000000001061390 $EXACT --addr 10.77.0.1 --expect EADDRINUSE
ktap_check "user B, the IPv4 wildcard again: EBUSY" \
	as b listen 0x0000000001061390 $EXACT --addr 0.0.0.0 --expect EBUSY
ktap_check "user B, the IPv6 wildcard with AFONLY beside it" \
	as b listen 0x0000000001061390 $EXACT --addr :: --afonly --expect ok
ktap_check "user A's own listen for 10.77.0.1 under its wildcard" \
	as a listen 0x0000000001061390 $EXACT --addr 10.77.0.1 --expect ok
holder_release a_wild
ktap_check "user A holds a listener for 10.77.0.3 on TCP port 0x1391" \
	hold a_addr a listen 0x0000000001061391 $EXACT --addr 10.77.0.3 --expect ok --hold
ktap_check "user B's IPv4 wildcard over it" \
	as b listen 0x0000000001061391 $EXACT --addr 0.0.0.0 --expect ok
ktap_check "user B's unscoped listen over it" \
	as b listen 0x0000000001061391 $EXACT --expect ok
holder_release a_addr
ktap_check "user A holds an unscoped listener on TCP port 0x1392" \
	hold a_unscoped a listen 0x0000000001061392 $EXACT --expect ok --hold
ktap_check "user B's wildcard under it: EADDRINUSE" \
	as b listen 0x0000000001061392 $EXACT --addr :: --expect EADDRINUSE
holder_release a_unscoped

# --- e. Masked listens: CAP_NET_ADMIN's, and no one takes a service ID from one -------------
# A masked listen claims every service ID of its range that no one listens on yet, so that a
# later, exact listen of another user there is refused (below). Without CAP_NET_ADMIN, a user
# could claim that way a range of IDs others will want: with mask 0x400, half of all IDs,
# rping's TCP port 7174 (0x1c06) among them.

ktap_check "user A cannot listen under a mask, over service IDs no one listens on: EPERM" \
	as a listen 0x0000000000000400 0x0000000000000400 --expect EPERM
ktap_check "user A with CAP_NET_ADMIN holds a masked listener on TCP ports 0x1400..0x14ff" \
	hold a_masked a+net_admin listen 0x0000000001061400 0xffffffffffffff00 --expect ok --hold
ktap_check "user B cannot take port 0x1401 from it: EADDRINUSE" \
	as b listen 0x0000000001061401 $EXACT --expect EADDRINUSE
ktap_check "root cannot either: EADDRINUSE" \
	as root listen 0x0000000001061401 $EXACT --expect EADDRINUSE
ktap_check "user A's own exact listen on 0x1401, inside its range" \
	as a listen 0x0000000001061401 $EXACT --expect ok
holder_release a_masked

# --- f. Who sees which CEPs ------------------------------------------------------------------
# The helper's list fails on its own if another file's CEP shows a user_context.

ktap_check "user A holds a listener on 0x0000000001061500 with user_context 0x1234" \
	hold a_context a listen 0x0000000001061500 $EXACT --context 0x1234 --expect ok --hold
ktap_check "user B's LIST_CEPS shows none of user A's CEPs" \
	as b list --expect-own 0 --expect-other 0
ktap_check "root's LIST_CEPS shows user A's listener, with user_context 0" \
	as root list --min-other 1 --want-service 0x0000000001061500
ktap_check "user A's other file lists that listener too, with user_context 0" \
	as a list --expect-own 0 --min-other 1 --want-service 0x0000000001061500
holder_release a_context

# --- GIDs of rxe0 port 1 for g and h ---------------------------------------------------------

GIDS=/sys/class/infiniband/$RXE_DEV/ports/1
NO_GID=0000:0000:0000:0000:0000:0000:0000:0000
# The port's GIDs and their types, by index (read by the shell: under TCG every process
# started costs a good fraction of a second).  An empty entry cannot be read.
PORT_GID=() PORT_GID_TYPE=()
for i in {0..15}; do
	if ! read -r gid 2>/dev/null <"$GIDS/gids/$i" || [ "$gid" = $NO_GID ]; then continue; fi
	read -r type 2>/dev/null <"$GIDS/gid_attrs/types/$i" || type=unknown
	PORT_GID[i]=$gid PORT_GID_TYPE[i]=$type
	ktap_print_msg "$RXE_DEV port 1 GID $i: $gid, $type"
done
# gid_index TYPE [PREFIX]: the first GID of type TYPE ("RoCE v2", "IB/RoCE v1") that starts
# with PREFIX.
gid_index() {
	local i
	for i in "${!PORT_GID[@]}"; do
		if [ "${PORT_GID_TYPE[i]}" = "$1" ] && [[ ${PORT_GID[i]} == "${2:-}"* ]]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}
# The IPv4 one: the helper's REQs go to it (this host), and loop back.
v2_index=$(gid_index "RoCE v2" 0000:0000:0000:0000:0000:ffff:)
v1_index=$(gid_index "IB/RoCE v1")

# --- g. Monitors see their user's records only (all of them with CAP_NET_ADMIN) --------------

monitors_ready() { hold mon_b b monitor --hold && hold mon_root root monitor --hold; }
ktap_check "user B and root monitor" monitors_ready
# A REQ to a service no one listens on: it loops back and cepm answers it with a REJ, an
# event (REJ_RECEIVED) on user A's CEP, read before the CEP goes.
ktap_check "user A connects to 0x0000000001063000 and gets the REJ" \
	as a connect-sgid "$v2_index" --expect ok --wait-event 20000
# Their records are all queued now: a monitor drains its queue when its stdin closes.
holder_release mon_b
holder_release mon_root
ktap_check "root's monitor has the records of user A's CEP" \
	grep -q '^trace 0x0000000001063000 ' "$work/mon_root.log"
# The helper's last line counts the records it read.
ktap_check "user B's monitor has no record: it owns no CEP" \
	grep -q ': records 0$' "$work/mon_b.log"
# Every event walks the monitors, and each holds a queue of 4096 records: a user may have 16
# (max_monitors_per_user).
ktap_check "user A's 17th monitor: EDQUOT" as a monitors 17 --expect EDQUOT
ktap_check "user A holds 16 monitors" hold mon_a16 a monitors 16 --expect ok --hold
ktap_check "... and user B monitors meanwhile: the limit is per user" as b monitors 1 --expect ok
holder_release mon_a16

# --- h. CONNECT's source GID: one the port has, of the type cepm speaks there ---------------

# rxe's table has 1024 entries: 200 is inside it, and empty.
ktap_check "user A's CONNECT from an empty GID entry (index 200): EINVAL" \
	as a connect-sgid 200 --expect EINVAL
if [ -n "$v1_index" ]; then
	ktap_check "user A's CONNECT from a RoCE v1 GID (index $v1_index): EINVAL" \
		as a connect-sgid "$v1_index" --expect EINVAL
else
	ktap_print_msg "$RXE_DEV port 1 has no RoCE v1 GID"
	ktap_test_skip "user A's CONNECT from a RoCE v1 GID: EINVAL"
fi
ktap_check "user A's CONNECT from a RoCE v2 GID (index ${v2_index:-none})" \
	as a connect-sgid "${v2_index:-none}" --expect ok

# --- i. Limits per file and per user ---------------------------------------------------------

LIMITS=(max_ceps_per_file=4 max_ceps_per_user=6 max_listens_per_file=2 max_listens_per_user=3 max_monitors_per_user=2)
limits_loaded=1
ktap_check "cepm reloaded with ${LIMITS[*]}" reload_cepm "${LIMITS[@]}"
params_shown() {
	local p value rc=0
	for p in "${LIMITS[@]}"; do
		value=
		read -r value 2>/dev/null <"/sys/module/cepm/parameters/${p%=*}"
		[ "$value" = "${p#*=}" ] || { ktap_print_msg "${p%=*} is '$value'"; rc=1; }
	done
	return $rc
}
ktap_check "/sys/module/cepm/parameters/ shows them" params_shown
ktap_check "a file's 5th CEP: EMFILE" as a create 5 --expect EMFILE
ktap_check "a user's 7th CEP, across two files: EDQUOT" as a create 7 --files 2 --expect EDQUOT
ktap_check "a file's 3rd listen: EMFILE" as a listens 3 --expect EMFILE
ktap_check "a user's 4th listen, across two files: EDQUOT" as a listens 4 --files 2 --expect EDQUOT
ktap_check "a user's 3rd monitor: EDQUOT" as a monitors 3 --expect EDQUOT
ktap_check "MIGRATE to a file with 4 CEPs: EMFILE, and the CEP stays" as a migrate 4 --expect EMFILE
ktap_check "MIGRATE to a file with 3 CEPs: it moves" as a migrate 3 --expect ok
ktap_check "MIGRATE of a listener to a file with 2 listens: EMFILE, and it stays, listening" \
	as a migrate 2 --listening --expect EMFILE
ktap_check "MIGRATE of a listener to a file with 1 listen: it moves, listening" \
	as a migrate 1 --listening --expect ok
ktap_check "MIGRATE between two files of a user at its limit (3 + 3 CEPs): it moves" \
	as a migrate 3 --others 2 --expect ok
ktap_check "MIGRATE of user A's listener to root's file: EPERM, and it stays, listening" \
	as root migrate 1 --listening --drop-to "$USER_A" --expect EPERM
ktap_check "MIGRATE of user A's CEP to root's file: it moves" as root migrate 1 --drop-to "$USER_A" --expect ok
ktap_check "user A holds 4 CEPs in two files" hold a_ceps a create 4 --files 2 --expect ok --hold
ktap_check "user A's 7th CEP, in another process: EDQUOT" as a create 3 --expect EDQUOT
ktap_check "user B creates 4 CEPs in two files meanwhile: the limits are per user" \
	as b create 4 --files 2 --expect ok
holder_release a_ceps
# The REQs waiting in a listener's backlog are its user's CEPs too: unclaimed, they are charged
# to nothing else, and a user's own REQs to its own listeners would otherwise pin a CEP each,
# up to the backlog of every listen it may hold.  They count against the user, not the file:
# a listener may move to another of the user's files with its backlog.

# requests_wait SID QP WANT: 10 REQs to SID (root's send-mad), each from a QP of its own
# (QPN QP + i, comm ID QP << 16 | i: a second REQ from one QP would be a stale connection's),
# of which WANT wait in the listener's backlog.
requests_wait() {
	local sid=$1 qp=$2 want=$3 req0 pending i
	req0=$(rx REQ)
	for i in 0 1 2 3 4 5 6 7 8 9; do
		"$CEPMCTL" send-mad "$RXE_DEV" 1 REQ --valid --service-id "$sid" \
			--comm-id $((qp << 16 | i)) --qpn $((qp + i)) || return 1
	done
	wait_until 20 counter_reaches rx REQ $((req0 + 10)) || return 1
	mad_barrier || return 1
	pending=$(backlog_of "$sid")
	ktap_print_msg "user A's listener has $pending REQ(s) waiting"
	[ "$pending" = "$want" ]
}
# Gone with the CEPs they were: user A may own 6 again.
charges_given_back() { wait_until 20 ceps_are 0 && as a create 6 --files 2 --expect ok; }

# Ten REQs to user A's listener: the backlog takes what user A may still own (5 beside the
# listener), and the rest are dropped, as beyond a full backlog.
SID_BACKLOG=0x0000000001064e7b
hold a_listen a listen $SID_BACKLOG 0 --expect ok --hold
ktap_check "10 REQs to user A's listener (user limit 6): 5 wait in its backlog, the rest are dropped" \
	requests_wait $SID_BACKLOG 0xbac0 5
holder_release a_listen
ktap_check "... and closing the listener leaves no CEP, and gives user A its 6 CEPs back" \
	charges_given_back

# A listener that moves keeps its backlog, which stays its user's: user A's listener in file 1
# (`migrate 1 --listening` listens on BASE + 1, and on BASE in file 2) gets 10 REQs, of which 4
# wait (6 less the two listeners); it moves to file 2, and file 1 closes.
SID_MOVING=0x0000000001062001
moving_listener_fills() {
	hold_start moving a migrate 1 --listening --wait-go --expect ok --hold &&
		holder_says moving waiting && requests_wait $SID_MOVING 0xbad0 4
}
moved_with_backlog() {
	holder_tell moving go && holder_says moving ready || return 1
	[ "$(backlog_of $SID_MOVING)" = 4 ]
}
ktap_check "10 REQs to user A's listener in its second file: 4 wait beside its 2 listeners" \
	moving_listener_fills
ktap_check "MIGRATE of that listener, then its first file closed: the 4 requests still wait" \
	moved_with_backlog
ktap_check "... and still count against user A: its next CEP is EDQUOT" as a create 1 --expect EDQUOT
moved_file_closed() { holder_release moving && charges_given_back; }
ktap_check "closing the file they moved to leaves no CEP, and gives user A its 6 CEPs back" \
	moved_file_closed
reload_defaults() { reload_cepm && limits_loaded=0; }
ktap_check "cepm reloaded with its default limits" reload_defaults

# --- j. Memory is charged to the caller's cgroup ---------------------------------------------

# memory_cgroup: a cgroup of ours ($CG_DIR) under the memory controller, or false with the
# reason in $no_cgroup.
no_cgroup=
memory_cgroup() {
	if [ "$(stat -fc %T $CG 2>/dev/null)" != cgroup2fs ]; then
		mount -t cgroup2 none $CG || { no_cgroup="cgroup2 could not be mounted"; return 1; }
		cg_mounted=1
	fi
	if ! grep -qw memory $CG/cgroup.controllers; then
		no_cgroup="no memory controller (CONFIG_MEMCG)"
		return 1
	fi
	if ! grep -qw memory $CG/cgroup.subtree_control; then
		if ! echo +memory >$CG/cgroup.subtree_control; then
			no_cgroup="the memory controller cannot be enabled"
			return 1
		fi
		cg_memory_enabled=1
	fi
	mkdir "$CG_DIR" || { no_cgroup="cannot create $CG_DIR"; return 1; }
}

kmem() { awk -v k="$1" '$1 == k { print $2 }' "$CG_DIR/memory.stat"; }
kmem_grew_by() { [ $(($(kmem "$1") - $2)) -ge "$3" ]; }

# User A, alone in our cgroup, creates 2000 CEPs: the cgroup's kernel memory grows by at least
# 256 bytes a CEP (a CEP is far larger; were it not charged, it would hardly grow).  Measured
# from the moment the helper is in the cgroup with /dev/cepm open, so that only the CEPs count.
charged_to_cgroup() {
	local key=kernel before now want=$((2000 * 256)) rc
	# memory.stat's total of kernel memory; older kernels have only its slab part.
	grep -q '^kernel ' "$CG_DIR/memory.stat" || key=slab
	ktap_print_msg "/dev/cepm: $(stat -c '%a %U:%G' /dev/cepm)"
	HOLDER_CGROUP=$CG_DIR hold_start mem a create 2000 --wait-go --expect ok --hold &&
		holder_says mem waiting || return 1
	before=$(kmem $key)
	holder_tell mem go
	holder_says mem ready || return 1
	# memory.stat is flushed lazily (every 2 s at worst): wait for the growth to show.
	wait_until 10 kmem_grew_by $key "$before" $want
	rc=$?
	now=$(kmem $key)
	ktap_print_msg "memory.stat $key: $before before the CEPs, $now with them" \
		"(+$want at least expected)"
	holder_release mem || rc=1
	return $rc
}

# User A's 1000 CEPs each send a REQ (or a SIDR_REQ) that no answer ever reaches, cepm dropping
# every CM MAD rxe0 receives: each send stays outstanding in the MAD layer for its retries, with
# its 256-byte MAD, and the cgroup's kernel memory grows by at least those 256 bytes a message.
# (The CEP's entry in its port's table of CEPs with an address handle grows it too, by less:
# with slub_debug's red zones that entry alone comes to over 128 bytes, so a bound of 128
# would pass with the MAD uncharged.)  Measured from the moment the CEPs exist, so that only
# what the sends keep counts.
sends_charged_to_cgroup() {
	local kind=$1 key=kernel before now want=$((1000 * 256)) rc
	grep -q '^kernel ' "$CG_DIR/memory.stat" || key=slab
	drop_rx 0 100000000 || return 1
	HOLDER_CGROUP=$CG_DIR hold_start "send-$kind" a create 1000 --send "$kind" --wait-go \
		--expect ok --hold && holder_says "send-$kind" waiting || { drop_rx 0 0; return 1; }
	before=$(kmem $key)
	holder_tell "send-$kind" go
	holder_says "send-$kind" ready && wait_until 10 kmem_grew_by $key "$before" $want
	rc=$?
	now=$(kmem $key)
	ktap_print_msg "memory.stat $key: $before before the ${kind}s, $now with them" \
		"(+$want at least expected)"
	holder_release "send-$kind" || rc=1
	drop_rx 0 0
	# The CEPs went with their file; the next check starts with none.
	wait_until 30 ceps_are 0 || rc=1
	return $rc
}

# after_go_grows NAME WHAT WANT ARGS...: user A's helper (ARGS, with --wait-go) as holder NAME
# in our cgroup; the cgroup's kernel memory must grow by at least WANT bytes from its "waiting"
# to its "ready" (the calls WHAT, made after the go), and no CEP may be left once it lets go.
after_go_grows() {
	local name=$1 what=$2 want=$3 key=kernel before now rc
	shift 3
	grep -q '^kernel ' "$CG_DIR/memory.stat" || key=slab
	HOLDER_CGROUP=$CG_DIR hold_start "$name" a "$@" && holder_says "$name" waiting || return 1
	before=$(kmem $key)
	holder_tell "$name" go
	holder_says "$name" ready && wait_until 10 kmem_grew_by $key "$before" "$want"
	rc=$?
	now=$(kmem $key)
	ktap_print_msg "memory.stat $key: $before before the $what, $now with them" \
		"(+$want at least expected)"
	holder_release "$name" || rc=1
	wait_until 30 ceps_are 0 || rc=1
	return $rc
}

# User A claims 500 REQs that its own CEPs sent to its own listener, and prepares a REP for
# each: the cgroup's kernel memory grows by at least 200 bytes a REP (one holds up to 196 bytes
# of private data; uncharged, hardly anything grows). Measured from the moment every REQ is
# claimed, so that only the prepared REPs count.
reps_charged_to_cgroup() {
	after_go_grows reps PREPARE_REPs $((500 * 200)) prepare-reps 500 --wait-go --expect ok --hold
}

if memory_cgroup; then
	ktap_check "user A's CEPs are charged to its memory cgroup" charged_to_cgroup
	ktap_check "so are the REQs they send" sends_charged_to_cgroup req
	ktap_check "and their SIDR_REQs" sends_charged_to_cgroup sidr
	ktap_check "and the REPs it prepares" reps_charged_to_cgroup
else
	ktap_print_msg "$no_cgroup"
	ktap_test_skip "user A's CEPs are charged to its memory cgroup"
	ktap_test_skip "so are the REQs they send"
	ktap_test_skip "and their SIDR_REQs"
	ktap_test_skip "and the REPs it prepares"
fi
cgroup_cleanup

# --- k. The MAD layer's window of requests ---------------------------------------------------

# The MAD layer lets an agent that receives have recv_queue_size / 4 MADs (128 with ib_core's
# default) waiting for their answers, and queues the rest behind them, untimed, one queue for
# every user of the port, until one is answered or one of its tries times out.  User A's
# requests, however long their tries, must hold back no one else's: root's connection to its
# own listener on the port is made at once, with as many of user A's REQs waiting for 2.3 hours
# a try as fill the window.  Once REQs with CM response timeout 31 (which any user may choose)
# that no one answers (rxe0 drops them as they arrive); once REQs to user A's own listener,
# each answered with an MRA of service timeout 31, which lengthens the try it answers.
read -r recv_queue_size </sys/module/ib_core/parameters/recv_queue_size
WINDOW=$((recv_queue_size / 4))
SID_AFTER_WINDOW=0x0000000001064f01
ceps_in() {
	local n=0 state
	while read -r _ state _; do [ "$state" = "$1" ] && n=$((n + 1)); done < <("$CEPMCTL" list)
	echo $n
}
all_dropped() { [ "$(drops_pending)" = 0 ]; }
unanswered_window() {
	drop_rx 0x10 $WINDOW || return 1
	hold_start window a create $WINDOW --send req --response-timeout 31 --expect ok --hold &&
		holder_says window ready && wait_until 30 all_dropped
}
mra_window() {
	local mra0
	mra0=$(rx MRA)
	hold_start mras a prepare-reps $WINDOW --mra-timeout 31 --expect ok --hold &&
		holder_says mras ready && wait_until 30 counter_reaches rx MRA $((mra0 + WINDOW)) &&
		mad_barrier
}
# connects_after_window STATE: root's connection is made, and user A's requests are still
# waiting meanwhile (WINDOW of its CEPs in STATE).
connects_after_window() {
	local apid rc waiting
	"$CEPMCTL" accept --cm-only --service-id $SID_AFTER_WINDOW --count 1 --timeout-ms 30000 \
		>"$work/accept.log" 2>&1 &
	apid=$!
	if wait_until 10 file_has '^accept: listening' "$work/accept.log"; then
		"$CEPMCTL" connect --cm-only --service-id $SID_AFTER_WINDOW --timeout-ms 20000 \
			>"$work/connect.log" 2>&1
		rc=$?
	else
		rc=1
	fi
	[ $rc = 0 ] || kill $apid 2>/dev/null
	wait $apid || rc=1
	show_files "$work/connect.log" "$work/accept.log"
	waiting=$(ceps_in "$1")
	ktap_print_msg "user A's CEPs in $1 after root's connection: $waiting (window $WINDOW)"
	[ "$waiting" -ge $WINDOW ] || rc=1
	return $rc
}
# window_released HOLDER: it lets go, and with it its CEPs go.
window_released() {
	local rc=0
	holder_release "$1" || rc=1
	drop_rx 0 0 || rc=1
	wait_until 30 ceps_are 0 || rc=1
	return $rc
}
ktap_check "user A's $WINDOW REQs that no one answers, each try waiting 2.3 hours, are sent" \
	unanswered_window
ktap_check "... and hold back no one: root's connection on the port is made at once" \
	connects_after_window REQ_SENT
ktap_check "... and user A's CEPs go with its file" window_released window
ktap_check "user A's $WINDOW REQs to its own listener, each answered by an MRA of 2.3 hours" \
	mra_window
ktap_check "... and hold back no one: root's connection on the port is made at once" \
	connects_after_window MRA_REQ_RCVD
ktap_check "... and user A's CEPs go with its files" window_released mras

# --- l. A CEP spawned by a REQ is charged to whoever claims it -------------------------------

# User A's 500 REQs to its own listener wait in its backlog, spawned by the MAD layer's work,
# where no cgroup can be charged; then user A claims them: each CEP is charged to the claimer
# from then on, as a socket born of a SYN is when accept(2) takes it, and the cgroup's kernel
# memory grows by at least 512 bytes a claim (a CEP is larger; uncharged, only the handle
# grows it, by less). Measured from the moment every REQ waits, so that only the claims count.
claims_charged_to_cgroup() {
	after_go_grows claims GET_REQUESTs $((500 * 512)) prepare-reps 500 --claims-after-go \
		--wait-go --expect ok --hold
}

if memory_cgroup; then
	ktap_check "user A's listener's REQs spawn CEPs charged to user A's cgroup once it claims them" \
		claims_charged_to_cgroup
else
	ktap_print_msg "$no_cgroup"
	ktap_test_skip "user A's listener's REQs spawn CEPs charged to user A's cgroup once it claims them"
fi
cgroup_cleanup

# --- m. A user's namespaces count against that user's limits --------------------------------

# A user given subordinate uids (/etc/subuid) maps them into user namespaces it makes
# (unshare --map-auto, rootless containers): were each uid a user of its own, one user would
# have the limits of 65,536. The uids of a namespace a user made count against that user's
# limits, as the kernel's ucounts charge each namespace to the user who made it; those of a
# namespace root made (a container's) are users of their own, as they are root's to hand out.

# userns_made VAR BASE [PREFIX...]: a process (run through PREFIX, e.g. setpriv as user A;
# as root if none) in a user namespace of its own, its pid in VAR; root maps uids and gids 0 to
# 15 there to BASE to BASE + 15, as newuidmap would for a user with those subordinate ids (the
# guest's root is read-only, so no /etc/subuid). userns_cleanup ends it.
ns_of() { readlink "/proc/$1/ns/user" 2>/dev/null; }
# ns_differs PID NS: PID lives, in a user namespace other than NS.
ns_differs() {
	local ns
	ns=$(ns_of "$1") && [ -n "$ns" ] && [ "$ns" != "$2" ]
}
userns_made() {
	local var=$1 base=$2 ours pid
	shift 2
	ours=$(ns_of $$)
	# Its descriptors: none of the test's (no holder runs when it starts).
	"$@" unshare --user -- sleep infinity </dev/null >/dev/null 2>&1 &
	pid=$!
	printf -v "$var" %s "$pid"
	wait_until 10 ns_differs "$pid" "$ours" &&
		echo "0 $base 16" >"/proc/$pid/uid_map" && echo "0 $base 16" >"/proc/$pid/gid_map"
}
userns_cleanup() {
	local pid rc=0
	for pid in $USERNS_A_PID $USERNS_ROOT_PID; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		[ ! -e "/proc/$pid" ] || { ktap_print_msg "user namespace process $pid still runs"; rc=1; }
	done
	USERNS_A_PID= USERNS_ROOT_PID=
	return $rc
}
# nested_in_a: uid 1 of user A's namespace makes one inside it, mapping itself as its root,
# as any user may; that namespace's 3rd CEP, with user A holding 4, is over user A's 6.
nested_in_a() {
	nsenter --target "$USERNS_A_PID" --user --setuid 1 --setgid 1 \
		unshare --user --map-root-user "$HELPER" create 3 --expect EDQUOT
}
root_namespace_holds() {
	userns_made USERNS_ROOT_PID 300000 && hold r_ceps r@1 create 4 --files 2 --expect ok --hold
}
namespaces_ended() { userns_cleanup && reload_defaults; }

limits_loaded=1
ktap_check "cepm reloaded with ${LIMITS[*]}" reload_cepm "${LIMITS[@]}"
ktap_check "user A makes a user namespace, and root maps uids 200000 to 200015 into it" \
	userns_made USERNS_A_PID 200000 setpriv --reuid=$USER_A --regid=$USER_A --clear-groups
ktap_check "uid 1 of user A's namespace holds 4 CEPs in two files" \
	hold ns_ceps a@1 create 4 --files 2 --expect ok --hold
ktap_check "uid 2 of user A's namespace: its 3rd CEP is EDQUOT, over user A's 6" \
	as a@2 create 3 --expect EDQUOT
ktap_check "user A itself: its 3rd CEP is EDQUOT" as a create 3 --expect EDQUOT
ktap_check "user B creates 4 CEPs in two files meanwhile" as b create 4 --files 2 --expect ok
holder_release ns_ceps
ktap_check "uid 1 of user A's namespace monitors" hold ns_mon a@1 monitors 1 --expect ok --hold
ktap_check "uid 2 of user A's namespace: its 2nd monitor is EDQUOT, over user A's 2" \
	as a@2 monitors 2 --expect EDQUOT
holder_release ns_mon
ktap_check "uid 1 of user A's namespace holds 2 listens in two files" \
	hold ns_listens a@1 listens 2 --files 2 --expect ok --hold
# Other service IDs than uid 1's: on those, uid 2 (another uid) would get EADDRINUSE first.
ktap_check "uid 2 of user A's namespace: its 2nd listen is EDQUOT, over user A's 3" \
	as a@2 listens 2 --base 0x0000000001062100 --expect EDQUOT
holder_release ns_listens
# Two accounts of one uid: 200001 opens a file outside the namespace (its own account), and
# uid 1 of user A's namespace, the same global uid, one inside (user A's account).
ktap_check "a listener of uid 1 of user A's namespace does not move to uid 200001's file outside it: EPERM" \
	as root migrate 0 --listening --across-ns "$USERNS_A_PID:1:200001" --expect EPERM
ktap_check "... and a CEP that does not listen moves" \
	as root migrate 0 --across-ns "$USERNS_A_PID:1:200001" --expect ok
ktap_check "user A holds 4 CEPs in two files" hold a_four a create 4 --files 2 --expect ok --hold
ktap_check "a namespace made inside user A's: its 3rd CEP is EDQUOT" nested_in_a
holder_release a_four
ktap_check "root makes a user namespace, and uid 1 there holds 4 CEPs in two files" \
	root_namespace_holds
ktap_check "... which count against no limit of root's: root creates 6" \
	as root create 6 --files 2 --expect ok
holder_release r_ceps
ktap_check "the namespaces end, and cepm is reloaded with its default limits" namespaces_ended

# QUERY shows a user what LIST_CEPS shows it: its own CEPs, and the ports' traffic only with
# CAP_NET_ADMIN (the counters are every user's MADs).
query_setup() { hold a_query a create 4 --files 2 --expect ok --hold && mad_barrier; }
ktap_check "user A holds 4 CEPs in two files, and the port has counted a MAD" query_setup
ktap_check "user B's QUERY counts none of them, nor any MAD" \
	as b query --expect-ceps 0 --expect-traffic no
ktap_check "... user A's counts its 4, nor any MAD" as a query --expect-ceps 4 --expect-traffic no
ktap_check "... and with CAP_NET_ADMIN, user B's counts every CEP and the MADs" \
	as b+net_admin query --min-ceps 4 --expect-traffic yes
holder_release a_query
ktap_finished
