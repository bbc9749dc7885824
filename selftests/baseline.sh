# SPDX-License-Identifier: GPL-2.0
# The guest's baseline between two selftests, and its repair.  Sourced by run.sh.
#
# The baseline is what scripts/vm-guest.sh sets up: cepm.ko loaded with default parameters,
# the stock CM modules (ib_cm, iw_cm, rdma_cm, rdma_ucm) unloaded, no network namespace
# cepm_peer, veth0 (10.77.0.1/24) <-> veth1 both up in this namespace with no qdisc and no
# fixed neighbour on veth0 but the silent peers' (baseline_silent_peers, which run.sh adds),
# the shared RDMA netns mode, rxe0 on veth0 as the only rxe device, no fault injection armed,
# and no process left from a test.  A test that fails half way, or that the runner stops at its time
# limit, may leave any of this behind; baseline_restore puts it back so that the next test
# starts from the same guest whatever happened before (a failure counts once).

BASELINE_STOCK_MODULES=(rdma_ucm rdma_cm iw_cm ib_cm)
BASELINE_PEER_NS=cepm_peer
BASELINE_TOOLS=(cepmctl rping ucmatose rdma_server rdma_client cmtime udaddy dumpcap tshark
	rdma_reject_server ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat)
# A process's comm keeps 15 characters of its name: each tool by its comm, and all of them as
# one pattern for pkill -x (which anchors the whole alternation).
declare -A BASELINE_TOOL_OF_COMM=()
for _m in "${BASELINE_TOOLS[@]}"; do BASELINE_TOOL_OF_COMM[${_m:0:15}]=$_m; done
unset _m
BASELINE_TOOLS_PKILL=$(IFS='|'; echo "${!BASELINE_TOOL_OF_COMM[*]}")

# Silent peers: addresses on veth0's link whose neighbour entries are fixed to MACs no one
# has, so that a REQ to them leaves (the module takes a CONNECT's MAC from the neighbour
# table, and waits at most a second for it) and is never answered. 10.77.0.98 is the
# selftests' "nowhere"; fe80::1, ioctl_abi's good_path(). 10.77.0.99 stays unresolvable.
baseline_silent_peers() {
	printf '%s\n' 'neigh replace 10.77.0.98 lladdr 02:00:00:00:00:98 dev veth0 nud permanent' \
		'neigh replace fe80::1 lladdr 02:00:00:00:00:01 dev veth0 nud permanent' | ip -batch -
}

# fact VAR FILE: VAR becomes the first line of FILE, read without starting a process (or
# forking: a command substitution forks, tens of milliseconds under TCG).
fact() {
	printf -v "$1" '%s' ''
	read -r "$1" <"$2" 2>/dev/null
	return 0
}

# cepm's debugfs fault injection: armed (non-zero) is a fact of the guest to repair.
BASELINE_FAULT_KNOBS="drop_rx_count destroy_delay_ms listen_delay_ms request_delay_ms fail_handle_count fail_backlog_push_count pretend_ib"

# What the guest looks like, one fact a line; two snapshots compare with diff.  It runs after
# every test, and under TCG every process costs 0.1 to 0.25 s and every fork tens of
# milliseconds: it reads /sys and /proc with shell builtins and starts one program, an
# `ip -batch` for veth0's address, root qdisc (what `ip link` calls "qdisc", as the tests' netem
# is) and fixed neighbours.
baseline_snapshot() {
	local m p d v line comm
	local -A running=()
	for m in cepm "${BASELINE_STOCK_MODULES[@]}"; do
		[ -e "/sys/module/$m/initstate" ] && echo "module $m loaded"
	done
	for p in /sys/module/cepm/parameters/*; do
		[ -r "$p" ] && fact v "$p" && echo "cepm parameter ${p##*/}=$v"
	done
	for p in /run/netns/*; do
		[ -e "$p" ] && echo "netns ${p##*/}"
	done
	for d in veth0 veth1; do
		[ -e "/sys/class/net/$d" ] && fact v "/sys/class/net/$d/operstate" && echo "link $d $v"
	done
	for d in /sys/class/infiniband/*; do
		[ -e "$d" ] && fact v "$d/ports/1/gid_attrs/ndevs/0" && echo "rdma ${d##*/} $v"
	done
	# Y: the shared RDMA netns mode (netns_exclusive.sh sets the exclusive one for a while).
	[ -r /sys/module/ib_core/parameters/netns_mode ] &&
		fact v /sys/module/ib_core/parameters/netns_mode && echo "rdma netns mode $v"
	# One line a fact in -o mode: "N: veth0    inet ADDR ...", "N: veth0: <FLAGS> ... qdisc
	# KIND ...", and a neighbour's "ADDR lladdr ... PERMANENT". Of IPv6, the global addresses
	# tests add (fd77::1 ...): the link-local one follows veth0's MAC, which a restore renews.
	while read -r line; do
		case $line in
		*": veth0 "*inet\ *) read -r _ _ _ v _ <<<"$line" && echo "addr veth0 $v" ;;
		*": veth0 "*inet6\ *"scope global"*) read -r _ _ _ v _ <<<"$line" && echo "addr veth0 $v" ;;
		*": veth0 "*inet6\ *) ;;
		# veth0's link line names it "veth0@veth1:", or "veth0@ifN:" with veth1 elsewhere.
		*": veth0@"* | *": veth0: "*) [[ $line =~ \ qdisc\ ([^ ]+) ]] &&
			[ "${BASH_REMATCH[1]}" != noqueue ] && echo "qdisc ${BASH_REMATCH[1]}" ;;
		*) echo "neighbour $line" ;;
		esac
	done < <(printf '%s\n' 'addr show dev veth0' 'link show dev veth0' 'neigh show dev veth0 nud permanent' |
		ip -o -force -batch - 2>/dev/null)
	for knob in $BASELINE_FAULT_KNOBS; do
		[ -r /sys/kernel/debug/cepm/$knob ] && fact v /sys/kernel/debug/cepm/$knob && echo "$knob $v"
	done
	for p in /proc/[0-9]*/comm; do
		comm=
		# The error redirection first: a process may exit between the glob and the read.
		read -r comm 2>/dev/null <"$p"
		[ -n "$comm" ] && [ -n "${BASELINE_TOOL_OF_COMM[$comm]+set}" ] && running[$comm]=1
	done
	for m in "${BASELINE_TOOLS[@]}"; do
		[ -n "${running[${m:0:15}]+set}" ] && echo "process $m"
	done
	return 0
}

# Processes started under the tag CEPM_TEST_TAG=$1 (run.sh exports it for each test): the
# tag survives `ip netns exec`, setsid and double forks, which process groups do not.
baseline_tagged_pids() {
	local f pid env IFS=$'\n'
	# Read with builtins: no process (a grep over them all takes 0.2 s under TCG).
	for f in /proc/[0-9]*/environ; do
		env=()
		# The error redirection first: a process may exit between the glob and the read.
		mapfile -d '' -t env 2>/dev/null <"$f"
		[[ $IFS${env[*]}$IFS == *"${IFS}CEPM_TEST_TAG=$1$IFS"* ]] || continue
		pid=${f#/proc/}
		pid=${pid%/environ}
		[ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] || echo "$pid"
	done
}

# cepm with default parameters: what vm-guest.sh loads.
baseline_load_cepm() { insmod "$CEPM_KO"; }

# Returns once rxe0 is in cepm's port list, where the next test expects it (10 s at most).
baseline_await_rxe0() {
	# grep -c reads the whole list: grep -q would leave cepmctl writing to a closed pipe.
	for _ in $(seq 200); do
		[ "$("$CEPM_ROOT/target/release/cepmctl" ports 2>/dev/null | grep -c '^rxe0 port 1 ')" != 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# Says what it repairs, one "# baseline: ..." line each.
baseline_note() { echo "# baseline: $*"; }

# baseline_kill_tagged TAG: kill what the test TAG left running, and say so; fails if there
# was anything to kill.
baseline_kill_tagged() {
	local tag=$1 pids=()
	# Run after every test, usually to find nothing: one grep, no other process.
	mapfile -t pids < <(baseline_tagged_pids "$tag")
	[ ${#pids[@]} -gt 0 ] || return 0
	baseline_note "killed processes the test left running: $(for p in "${pids[@]}"; do cat /proc/$p/comm 2>/dev/null; done | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')"
	kill -KILL "${pids[@]}" 2>/dev/null
	# Reaped by init; wait until they are gone so they release /dev/cepm and uverbs.
	for _ in $(seq 100); do
		[ -z "$(baseline_tagged_pids "$tag")" ] && break
		sleep 0.05
	done
	return 1
}

# baseline_restore: put the guest back as baseline_snapshot's $BASELINE_EXPECTED describes it,
# once run.sh has killed what the test left running (baseline_kill_tagged, right after the
# test, before its output's pipe closes).  Only what differs is repaired (each step costs
# processes, seconds under TCG); the snapshot after the repairs must then match.
baseline_restore() {
	local m started=$SECONDS now differs await_rxe0=''
	now=$(baseline_snapshot)
	[ "$now" = "$BASELINE_EXPECTED" ] && return 0
	baseline_note "the guest differs from the baseline after the test:"
	differs=$(diff <(echo "$BASELINE_EXPECTED") <(echo "$now") | grep '^[<>]')
	sed 's/^</#   missing:/; s/^>/#   extra:  /' <<<"$differs"
	# differ REGEX: a fact that differs, missing or extra, starts with REGEX.
	differ() { [[ $'\n'$differs =~ $'\n'[\<\>]\ ($1) ]]; }

	differ qdisc && tc qdisc del dev veth0 root 2>/dev/null
	if differ neighbour; then
		ip neigh show dev veth0 nud permanent 2>/dev/null | awk '{ print $1 }' | while read -r ip; do
			ip neigh del "$ip" dev veth0
		done
		baseline_silent_peers
	fi
	# Every rxe device but rxe0 goes; veth1 comes home before its namespace is deleted (deleting
	# it there would delete veth0 too).
	if differ 'rdma|netns|link veth1'; then
		rdma link show 2>/dev/null | awk '{ print $2 }' | cut -d/ -f1 | grep -vx rxe0 | while read -r dev; do
			rdma link delete "$dev" 2>/dev/null
		done
		if ip netns list 2>/dev/null | grep -q "^$BASELINE_PEER_NS\\b"; then
			ip -n $BASELINE_PEER_NS link set veth1 netns 1 2>/dev/null
			ip netns del $BASELINE_PEER_NS 2>/dev/null
		fi
	fi
	# Once no namespace but the initial one is left: a deleted one takes a moment to go.
	if differ 'rdma netns mode'; then
		for _ in $(seq 100); do rdma system set netns shared 2>/dev/null && break; sleep 0.2; done
	fi
	# Any other tool still running (not tagged: started by a leftover we did not see).
	# One pkill for all: each pkill reads every process's name, half a second under TCG.
	differ process && pkill -KILL -x "$BASELINE_TOOLS_PKILL" 2>/dev/null
	if differ "module ($(IFS='|'; echo "${BASELINE_STOCK_MODULES[*]}")) "; then
		local loaded=()
		for m in "${BASELINE_STOCK_MODULES[@]}"; do [ -d "/sys/module/$m" ] && loaded+=("$m"); done
		# A tool that just died may hold rdma_ucm for a moment.
		[ ${#loaded[@]} = 0 ] ||
			for _ in $(seq 100); do modprobe -r "${loaded[@]}" 2>/dev/null && break; sleep 0.1; done
	fi
	if differ 'link|addr|rdma rxe0'; then
		if ! ip link show veth0 >/dev/null 2>&1 || ! ip link show veth1 >/dev/null 2>&1; then
			rdma link delete rxe0 2>/dev/null
			ip link del veth0 2>/dev/null
			ip link del veth1 2>/dev/null
			ip link add veth0 type veth peer name veth1
		fi
		ip -br -4 addr show dev veth0 | grep -q '10\.77\.0\.1/24' || ip addr replace 10.77.0.1/24 dev veth0
		ip -6 addr flush dev veth0 scope global
		ip link set veth0 up
		ip link set veth1 up
		rdma link show rxe0/1 >/dev/null 2>&1 || { rdma link add rxe0 type rxe netdev veth0; await_rxe0=1; }
		baseline_silent_peers
	fi
	if differ 'module cepm|cepm parameter'; then
		[ -d /sys/module/cepm ] && rmmod cepm
		baseline_load_cepm
		await_rxe0=1
	fi
	for knob in $BASELINE_FAULT_KNOBS; do
		differ "$knob " && [ -w /sys/kernel/debug/cepm/$knob ] && echo 0 >/sys/kernel/debug/cepm/$knob
	done
	[ -z "$await_rxe0" ] || baseline_await_rxe0

	now=$(baseline_snapshot)
	if [ "$now" = "$BASELINE_EXPECTED" ]; then
		baseline_note "restored in $((SECONDS - started))s"
		return 0
	fi
	baseline_note "could not restore it; still different:"
	diff <(echo "$BASELINE_EXPECTED") <(echo "$now") | grep '^[<>]' | sed 's/^</#   missing:/; s/^>/#   extra:  /'
	return 1
}
