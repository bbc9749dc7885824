#!/usr/bin/env bash
# Host test of scripts/vm's environment: what CEPM_VM_QEMU_OPTS, CEPM_VM_APPEND, CEPM_VM_CPUS and
# CEPM_VM_MEMORY ask for must reach QEMU's command line.  vng's --dry-run (CEPM_VM_DRY_RUN=1)
# prints that line and boots nothing; it needs vng and a built kernel (make deps, make kernel).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
line=$(CEPM_VM_DRY_RUN=1 CEPM_VM_ACCEL=tcg CEPM_VM_CPUS=1 CEPM_VM_MEMORY=1536M \
	CEPM_VM_APPEND=cepm_args_probe=1 CEPM_VM_QEMU_OPTS='-cpu max,-la57 -name cepm-args-probe' \
	"$here/vm" -- true 2>&1 | grep -m1 qemu-system) || {
	echo "not ok: scripts/vm printed no QEMU command; it said:"
	CEPM_VM_DRY_RUN=1 CEPM_VM_ACCEL=tcg CEPM_VM_QEMU_OPTS='-cpu max,-la57' "$here/vm" -- true 2>&1 | sed 's/^/  | /'
	exit 1
}
n=0 failed=0
# has WHAT PATTERN: QEMU's command line matches the extended regex PATTERN.
has() {
	n=$((n + 1))
	if [[ " $line " =~ $2 ]]; then
		echo "ok $n: $1"
	else
		echo "not ok $n: $1: no match for '$2' in: $line"
		failed=$((failed + 1))
	fi
}
has "CEPM_VM_QEMU_OPTS's -cpu comes after vng's, and wins" ' -cpu max .* -cpu max,-la57 '
has "CEPM_VM_QEMU_OPTS's other options are there" ' -name cepm-args-probe '
has "CEPM_VM_APPEND reaches the kernel's command line" 'tsc=reliable cepm_args_probe=1'
has "CEPM_VM_CPUS" ' -smp 1 '
has "CEPM_VM_MEMORY" ' -m 1536M '
n=$((n + 1))
if [[ $line =~ accel=kvm|-enable-kvm ]]; then
	echo "not ok $n: CEPM_VM_ACCEL=tcg, yet QEMU is asked for KVM: $line"
	failed=$((failed + 1))
else
	echo "ok $n: CEPM_VM_ACCEL=tcg: no KVM asked for"
fi
[ "$failed" = 0 ] && echo "check-vm-args-test: $n of $n passed" || { echo "check-vm-args-test: $failed of $n failed"; exit 1; }
