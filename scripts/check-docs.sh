#!/usr/bin/env bash
# Docs check: every name a page writes in backticks must exist.
#   scripts/check-docs.sh [PAGE.md...]     (default: docs/architecture.md)
# A backticked span (outside ``` fences) must be one of:
#   foo()                  a function or macro: "foo(" in the module's code
#   foo, a->b.c            identifiers (each part): a word of the module's code
#   struct foo, enum foo   the same for foo
#   siw_tx.c, include/x.h  a file or directory: a path in the tree, or a
#   scripts/, tests/run    bare name in its top or include/
# "The module's code" is the top-level siw_*.c, include/*.h and Kbuild with
# comments and string literals taken out, so a name left only in a comment
# or a log message does not count. Any other span fails too, unless it is
# in the small list of plain words below.
# Prints "PAGE:LINE: `SPAN`: why" per bad span and a summary line
# "check-docs: N names, M not found"; exit 1 if M > 0, 2 on usage errors.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Spans that are not code but may stay in backticks. Keep it short: a page
# written for this check names code only.
allow=()

pages=("$@")
((${#pages[@]})) || pages=("$top/docs/architecture.md")
for p in "${pages[@]}"; do
	[[ -r $p ]] || { echo "check-docs.sh: cannot read $p" >&2; exit 2; }
done

srcs=()
for f in "$top"/siw_*.c "$top"/include/*.h "$top/Kbuild"; do
	[[ -e $f ]] && srcs+=("$f")
done
((${#srcs[@]})) || { echo "check-docs.sh: no module sources under $top" >&2; exit 2; }

# The code without comments and strings: C files through one regex that
# matches string and character literals first (so "/*" in a string is
# not a comment), Kbuild without its '#' lines.
code=$(
	for f in "${srcs[@]}"; do
		case $f in
		*.c | *.h)
			perl -0777 -pe 's{("(?:\\.|[^"\\\n])*"|'\''(?:\\.|[^'\''\\\n])*'\'')|/\*.*?\*/|//[^\n]*}{defined $1 ? q("") : q( )}gse' "$f" ;;
		*) sed 's/#.*//' "$f" ;;
		esac
	done
)
declare -A word=() call=()
while read -r w; do word[$w]=1; done < <(grep -oE '[A-Za-z_][A-Za-z0-9_]*' <<<"$code" | sort -u)
while read -r w; do call[$w]=1; done < <(grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' <<<"$code" |
	sed 's/[[:space:]]*($//' | sort -u)

ident='[A-Za-z_][A-Za-z0-9_]*'
# check SPAN: empty output if it names what exists, else why not
check() {
	local s=$1 part a parts
	for a in "${allow[@]}"; do [[ $s == "$a" ]] && return 0; done
	if [[ $s == */* || $s =~ \.(c|h|sh|md|patterns)$ || $s == Kbuild ]]; then
		if [[ $s == /* || $s == *..* ]]; then
			echo "a path must be relative to the top of the tree"
		elif [[ $s == */* && -e $top/$s ]] ||
			[[ $s != */* && (-e $top/$s || -e $top/include/$s) ]]; then
			:
		else
			echo "no such file in the tree"
		fi
	elif [[ $s =~ ^($ident)\(\)$ ]]; then
		[[ -n ${call[${BASH_REMATCH[1]}]:-} ]] || echo "no call or definition of ${BASH_REMATCH[1]}() in the module's code"
	elif [[ $s =~ ^(struct|enum)\ ($ident)$ ]]; then
		[[ -n ${word[${BASH_REMATCH[2]}]:-} ]] || echo "${BASH_REMATCH[2]} is not in the module's code"
	elif [[ $s =~ ^$ident((->|\.)$ident)*$ ]]; then
		IFS=. read -ra parts <<<"${s//->/.}"
		for part in "${parts[@]}"; do
			[[ -n ${word[$part]:-} ]] || { echo "$part is not in the module's code"; return 0; }
		done
	else
		echo "not a code name (function(), identifier, struct/enum NAME or file)"
	fi
}

n=0 bad=0
for p in "${pages[@]}"; do
	rel=${p#"$top"/}
	while IFS=$'\t' read -r ln span; do
		n=$((n + 1))
		why=$(check "$span")
		if [[ -n $why ]]; then
			bad=$((bad + 1))
			printf '%s:%s: %s: %s\n' "$rel" "$ln" "\`$span\`" "$why"
		fi
	done < <(awk '
		/^[[:space:]]*```/ { fence = !fence; next }
		fence { next }
		{
			line = $0
			while (match(line, /`[^`]+`/)) {
				printf "%d\t%s\n", NR, substr(line, RSTART + 1, RLENGTH - 2)
				line = substr(line, RSTART + RLENGTH)
			}
		}' "$p")
done
echo "check-docs: $n names, $bad not found"
((bad == 0))
