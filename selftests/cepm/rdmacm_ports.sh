#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_bind_addr reserves its port over cepm's librdmacm as over the kernel's rdma_cm:
# rdma_bind_ports (one line per case: double binds, REUSEADDR, the wildcard next to an
# address, another process, a privileged port as uid 65534, rdma_listen's recheck, port 0
# read back with rdma_get_src_port before rdma_listen, as Open MPI does) must print what
# rdma_bind_ports.expected says, which is what the stock stack prints (rdmacm_stock.sh runs the
# same program there and compares). Then the module's own limit, which rdma_cm does not
# have: with max_ports_per_user=3, a user's 4th port is EDQUOT. Loopback on rxe0; afterwards
# no CEP is left.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
need_library
need_progs rdma_bind_ports
ktap_set_plan 6

out=$CEPM_ROOT/out/rdmacm_ports.$$
reloaded=0
# reload ARGS...: cepm loaded again with ARGS, managing rxe0.
reload() { rmmod cepm && insmod "$CEPM_KO" "$@" && wait_until 20 port_listed "$RXE_DEV" 1; }
trap 'chmod 0600 /dev/cepm; [ $reloaded = 0 ] || reload; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
# The uid 65534 case opens /dev/cepm as that user, as privileges.sh does.
chmod 0666 /dev/cepm
"${OVER_CEPM[@]}" timeout 120 "$progs/rdma_bind_ports" 10.77.0.1 7301 >"$out.run" 2>&1
rc=$?
diff -u "$(dirname "$0")/rdma_bind_ports.expected" "$out.run" >"$out.diff"
show_file '# ' "$out.diff"
ktap_check "rdma_bind_ports prints rdma_cm's results ($rc)" sh -c "test $rc = 0 && test ! -s '$out.diff'"
ktap_check "no CEP is left" wait_until 20 ceps_are 0

reloaded=1
ktap_check "cepm reloaded with max_ports_per_user=3" reload max_ports_per_user=3
bound() { "${OVER_CEPM[@]}" timeout 60 "$progs/rdma_bind_ports" --binds "$1" 10.77.0.1 >"$out.binds" 2>&1 &&
	show_file '# ' "$out.binds" && file_has "^$2\$" "$out.binds"; }
ktap_check "3 IDs bind 10.77.0.1:0 and hold their ports" bound 3 "3 bound"
ktap_check "a 4th: EDQUOT" bound 4 "bind 4: EDQUOT"
ktap_finished
