#!/usr/bin/env bash
# make lint's docs check: what README.md and docs/**/*.md cite must exist in the tree.
#   scripts/check-docs.sh [ROOT]      ROOT: the tree to check (default: this repository)
# Prints every failure as FILE:LINE: missing PATH and exits 1 if there is one.
#
# What is checked:
# - Every relative markdown link, [text](target) or a reference definition [label]: target,
#   resolved against the file's directory (a leading / against ROOT), without its #anchor or
#   ?query, must name a file or directory of the tree.  Links with a scheme (http:, https:,
#   mailto:...) and links to an anchor of the same page are not checked.
# - Every path of ours cited in backticks must exist.  A backticked token is one of ours if
#   its first component is one of the repository's top-level directories: rust, proto, cepm,
#   cepmctl, rdmacm, scripts, selftests, docs, udev, .ci, or include/uapi and include/cepm_*
#   (include/uapi/cepm*; include/rdma/ and include/uapi/rdma/ are Linux's), or it is one of
#   the top-level files (Kbuild, Makefile, Cargo.toml...).  Linux's own files under the names
#   we share (FOREIGN below: `rust/kernel/`, `scripts/checkpatch.pl`...) are not ours;
#   rdma-core's (`librdmacm/cma.c`) and Linux's other paths (`drivers/infiniband/core/cm.c`)
#   fail the first-component test.  `path:function`, `path (function)` and a selftest entry
#   `path@topology` check the path; in a command (a token with spaces), each word with a / is
#   checked the same way; glob-ish tokens (*, <, {, $, ...) are not paths and are skipped.
# - Fenced code blocks hold commands: each word with a / in them is checked as above.
# - A path in the tree counts only if git does not ignore it: a build product there (target/,
#   a .ko) is not something a reader of the repository has.
# - out/ holds what commands write, never a committed file.  A citation of a path under out/
#   (in a link, in backticks, within a command too, or in the prose) passes only if it is
#   one of the products below, each written by the command named beside it; any other, such
#   as a stored log of a past run, fails: cite the command that regenerates the file instead.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)

# The out/ products a reader can make (bash patterns, quoted; * matches across /).
OUT_PRODUCTS=(
	out out/                          # the directory itself
	out/bench.md out/bench 'out/bench/*' # make bench: its table, each run's output
	out/bench-listen.md out/bench-listen 'out/bench-listen/*' # make bench-listen: the same
	out/kbuild 'out/kbuild/*'         # make module: an object directory per kernel tree
	out/rdmacm 'out/rdmacm/*'         # make user: cepm's librdmacm.so.1
	out/selftests 'out/selftests/*'   # make selftest-progs: the guest's test programs
	out/check-host-test.log           # make check: the host tests' output
	out/check-selftest.log            # make check (scripts/check-vm-log.sh --selftest)
	'out/selftest-*.log'              # make selftest, with guests side by side: one a guest
	out/check-kasan.ktap              # make check-kasan: the guest's KTAP as it runs
	out/artefacts/interop-rping.pcap  # interop_rping.sh (make selftest): its capture
	out/artefacts/pair.pcap           # selftests/pair/run.sh (make check-pair): its capture
)
# Linux's files under the names of our top-level directories: cited, never ours.
FOREIGN=(
	'rust/kernel/*' 'rust/bindings/*' 'rust/macros/*' 'rust/helpers/*' 'rust/uapi/*'
	'rust/pin-init/*' rust/ffi.rs rust/compiler_builtins.rs
	scripts/checkpatch.pl 'scripts/Makefile.*' 'scripts/kconfig/*' 'scripts/mod/*' scripts/config
	scripts/decode_stacktrace.sh scripts/faddr2line scripts/generate_rust_analyzer.py
	scripts/rust_is_available.sh scripts/min-tool-version.sh
)

docs=()
[ -f "$root/README.md" ] && docs+=(README.md)
if [ -d "$root/docs" ]; then
	while IFS= read -r f; do docs+=("${f#"$root"/}"); done < <(find "$root/docs" -name '*.md' | sort)
fi
[ ${#docs[@]} -gt 0 ] || { echo "check-docs: no README.md or docs/*.md under $root" >&2; exit 1; }

# One record a citation: FILE<TAB>LINE<TAB>KIND<TAB>TEXT, KIND one of link (a link's target),
# code (a backticked token) or out (a path under out/, wherever it stands in the line).
citations() {
	awk -v OFS='\t' '
	# Every path under out/ in S, wherever it stands.
	function outs(s,    t) {
		while (match(s, /(^|[^A-Za-z0-9_.~\/-])out\/[^ \t)\]>,;:"'\'']*/)) {
			t = substr(s, RSTART, RLENGTH)
			s = substr(s, RSTART + RLENGTH)
			sub(/^[^o]*/, "", t); sub(/[.]+$/, "", t)
			print FILENAME, FNR, "out", t
		}
	}
	FNR == 1 { fence = "" }
	{
		line = $0
		if (match(line, /^ ? ? ?(```|~~~)/)) {
			mark = substr(line, RSTART + RLENGTH - 3, 3)
			if (fence == "") fence = mark; else if (fence == mark) fence = ""
			next
		}
		if (fence != "") {
			# A code block: its commands, word by word.
			outs(line)
			n = split(line, w, /[ \t]+/)
			for (i = 1; i <= n; i++) if (w[i] ~ /\//) print FILENAME, FNR, "word", w[i]
			next
		}
		if (match(line, /^ ? ? ?\[[^]]+\]:[ \t]*[^ \t]+/)) {
			t = substr(line, RSTART, RLENGTH); sub(/^[^]]*\]:[ \t]*/, "", t)
			print FILENAME, FNR, "link", t
			next
		}
		n = split(line, seg, "`")
		for (i = 1; i <= n; i++) {
			code = i % 2 == 0 && i < n
			if (code && seg[i] != "") print FILENAME, FNR, "code", seg[i]
			s = seg[i]
			while (!code && match(s, /\]\([^)]*\)/)) {
				t = substr(s, RSTART + 2, RLENGTH - 3)
				s = substr(s, RSTART + RLENGTH)
				sub(/^[ \t]*</, "", t); sub(/[ \t].*$/, "", t); sub(/>$/, "", t)
				print FILENAME, FNR, "link", t
			}
			outs(seg[i])
		}
	}' "$@"
}

# in_list WORD PATTERN...: WORD matches one of the bash patterns.
in_list() {
	local w=$1 p
	shift
	for p; do
		# shellcheck disable=SC2053 # a pattern, on purpose
		[[ $w == $p ]] && return 0
	done
	return 1
}

# ours TOKEN: TOKEN names a path of this repository (by its first component).
ours() {
	case $1 in
	rust | rust/* | proto | proto/* | cepm/* | cepmctl | cepmctl/* | rdmacm | rdmacm/* | \
		scripts | scripts/* | selftests | selftests/* | docs | docs/* | udev | udev/* | .ci | .ci/* | \
		include/uapi | include/uapi/ | include/uapi/cepm* | include/cepm_* | \
		Kbuild | Makefile | Cargo.toml | Cargo.lock | rustfmt.toml) ;;
	*) return 1 ;;
	esac
	! in_list "$1" "${FOREIGN[@]}"
}

failures=()
fail() { failures+=("$1:$2: missing $3"); }
present=()    # FILE:LINE<TAB>PATH of the paths found on disk, for git's verdict below

# check FILE LINE PATH: PATH (relative to root) exists; under out/, is a product.
check() {
	local file=$1 line=$2 path=${3%/}
	case $path/ in
	out/*)
		in_list "$3" "${OUT_PRODUCTS[@]}" || fail "$file" "$line" "$3"
		return ;;
	esac
	if [ -e "$root/$path" ]; then
		present+=("$file:$line"$'\t'"$3")
	else
		fail "$file" "$line" "$3"
	fi
}

# check_token FILE LINE TOKEN: TOKEN, if it names a path of ours, exists.
check_token() {
	local tok=${3#./}
	tok=${tok%%:*}  # `path:function`
	tok=${tok%%@*}  # `test.sh@topology`
	tok=${tok%%#*}
	case $tok in
	out | out/*) return ;;  # its out/ paths have records of their own
	*[*\<\>{}\$\[]* | *…* | *...*) return ;;
	esac
	ours "$tok" || return 0
	check "$1" "$2" "$tok"
}

cd "$root"
while IFS=$'\t' read -r file line kind text; do
	case $kind in
	link)
		case $text in
		'' | '#'* | [A-Za-z]*:*) continue ;;  # an anchor of this page; a scheme
		esac
		target=${text%%#*}
		target=${target%%\?*}
		target=${target//%20/ }
		[ -n "$target" ] || continue
		if [ "${target#/}" != "$target" ]; then
			target=${target#/}
		else
			target=$(dirname "$file")/$target
		fi
		norm=$(realpath -m --relative-to="$root" "$root/$target")
		case $norm in
		.) continue ;;
		../*) fail "$file" "$line" "$text"; continue ;;  # outside the tree
		esac
		[ "${target%/}" = "$target" ] || norm=$norm/
		check "$file" "$line" "$norm"
		;;
	out)
		check "$file" "$line" "$text"
		;;
	code)
		tok=${text#./}
		# `path (function)`: the path.
		if [[ $tok =~ ^([^[:space:]]+)\ \([^[:space:]\(\)]+(\(\))?\)$ ]]; then
			tok=${BASH_REMATCH[1]}
		fi
		if [[ $tok == *[[:space:]]* ]]; then
			# A command: the words that name a path.
			read -ra words <<<"$tok"
			for w in "${words[@]}"; do
				[[ $w != */* ]] || check_token "$file" "$line" "$w"
			done
		else
			check_token "$file" "$line" "$tok"
		fi
		;;
	word)
		w=${text#[(\"\']}
		w=${w%%[),;\"\']*}
		check_token "$file" "$line" "$w"
		;;
	esac
done < <(citations "${docs[@]}")

# A path git ignores (a build product) is not in the tree a reader has.
if [ ${#present[@]} -gt 0 ] && git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	declare -A ignored=()
	while IFS= read -r p; do ignored[$p]=1; done < <(
		printf '%s\n' "${present[@]}" | cut -f2 | git -C "$root" check-ignore --stdin || true)
	for entry in "${present[@]}"; do
		p=${entry#*$'\t'}
		[ -z "${ignored[$p]:-}" ] || failures+=("${entry%%$'\t'*}: missing $p")
	done
fi

if [ ${#failures[@]} -gt 0 ]; then
	printf '%s\n' "${failures[@]}"
	echo "check-docs: ${#failures[@]} citation(s) of files not in the tree (rules: scripts/check-docs.sh)" >&2
	exit 1
fi
echo "check-docs: ${#docs[@]} files, every cited path exists"
