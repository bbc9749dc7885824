#!/usr/bin/env bash
# Generate Rust declarations from one of cepm's C headers with the kernel's own bindgen
# options and clang flags, as recorded by the kernel build in
# rust/bindings/.bindings_generated.rs.cmd.  Kbuild calls it with cwd = objtree.
#
# usage: bindgen.sh OBJTREE HEADER OUTPUT [extra bindgen options (allowlists)...]
set -euo pipefail
objtree=$1 header=$2 output=$3
shift 3
extra=("$@")
cmdfile=$objtree/rust/bindings/.bindings_generated.rs.cmd
[ -r "$cmdfile" ] || { echo "bindgen.sh: $cmdfile missing: is $objtree a built CONFIG_RUST tree?" >&2; exit 1; }

# "savedcmd_X := <bindgen> <input> <options...> -o <output> -- <clang flags> ; sed ..."
line=$(sed -n 's/^savedcmd_[^ ]* := //p' "$cmdfile" | sed 's/\$(pound)/#/g')
cmd=${line%%;*}
opts=${cmd%% -- *}
clang=${cmd#* -- }
[ "$opts" != "$cmd" ] || { echo "bindgen.sh: unexpected format in $cmdfile" >&2; exit 1; }

eval "set -- $opts"
shift 2                                   # "bindgen rust/bindings/bindings_helper.h"
kernel_opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	-o) shift 2 ;;                    # the kernel's own output file
	*) kernel_opts+=("$1"); shift ;;
	esac
done

# Kernel-wide clang flags stay; the kernel's depfile and module-name defines do not.
eval "set -- $clang"
clang_flags=()
for f in "$@"; do
	case "$f" in
	-Wp,-MMD,*|-DKBUILD_MODFILE=*|-DKBUILD_BASENAME=*|-DKBUILD_MODNAME=*|-D__KBUILD_MODNAME=*) ;;
	*) clang_flags+=("$f") ;;
	esac
done

cd "$objtree"
"${BINDGEN:-bindgen}" "$header" "${kernel_opts[@]}" "${extra[@]}" -o "$output.tmp" -- \
	"${clang_flags[@]}" -DKBUILD_MODNAME='"cepm"' -D__KBUILD_MODNAME=cepm
mv "$output.tmp" "$output"
