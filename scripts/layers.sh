#!/usr/bin/env bash
# Layer check: which source file of the module uses which, from the
# object files' symbol tables, and every use that runs from a lower layer
# to a higher one.
#   scripts/layers.sh [BUILD_DIR]     (default: build/<newest kver>)
# Prints "file -> file (symbols)" for each upward use and a summary line
# "layers: N upward arrows (limit L)"; exit 1 above the limit.
# The ranks below are the layering the README's layout section describes:
# verbs -> tx -> rdmap -> ddp -> mpa on transmit; on receive the RX
# engine drives mpa, ddp and rdmap, and rdmap completes into the qp.
# Below them: zero-copy, the QP object and its state machine, below it
# the work queues and completions it drives, and memory. A smaller rank is higher; same rank: one layer
# in several files.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
limit=${SIW_LAYER_LIMIT:-2}
dir=${1:-}
if [[ -z $dir ]]; then
	dir=$(ls -d "$top"/build/*/siw.ko 2>/dev/null | sort -V | tail -n1)
	dir=${dir%/siw.ko}
fi
[[ -n $dir && -d $dir ]] || { echo "layers.sh: no build directory (run scripts/build.sh KVER)" >&2; exit 2; }

declare -A rank=(
	[siw_main]=0
	[siw_verbs]=1
	[siw_cm]=2 [siw_cmsock]=2 [siw_listen]=2
	[siw_tx]=3 [siw_rx]=3
	[siw_rdmap]=4
	[siw_ddp]=5
	[siw_mpa]=6
	[siw_zcopy]=7
	[siw_qp]=8
	[siw_queue]=9 [siw_cq]=9
	[siw_mem]=10
	[siw_trace]=11
)
declare -A owner=()
objs=()
for o in "$dir"/siw_*.o; do
	[[ -e $o ]] || continue
	f=$(basename "$o" .o)
	[[ -n ${rank[$f]+x} ]] || { echo "layers.sh: $f has no rank: add it to the table" >&2; exit 2; }
	objs+=("$o")
	while read -r _ t s; do
		case $t in [TDBRC]) owner[$s]=$f ;; esac
	done < <(nm -g --defined-only "$o")
done
declare -A up=()
edges=0
for o in "${objs[@]}"; do
	f=$(basename "$o" .o)
	while read -r t s; do
		d=${owner[$s]:-}
		[[ -n $d && $d != "$f" ]] || continue
		if ((rank[$f] > rank[$d])); then
			up["$f -> $d"]+=" $s"
		fi
	done < <(nm -u "$o")
done
n=0
for k in "${!up[@]}"; do
	n=$((n + 1))
	printf '%s (%s)\n' "$k" "$(echo ${up[$k]} | tr ' ' ',')"
done | sort
n=${#up[@]}
echo "layers: $n upward arrows (limit $limit)"
((n <= limit))
