#!/usr/bin/env bash
# List / resolve the kernels the tests run on.
#   scripts/kernels.sh list          -> "NAME KVER" per available kernel
#   scripts/kernels.sh kver NAME     -> KVER of stock|debug, or exit 1 with a
#                                       reason on stderr when it is missing
#   scripts/kernels.sh names         -> "stock debug"
# stock: newest /boot/vmlinuz-*-amd64 that has /lib/modules/KVER/build.
# debug: newest /boot/vmlinuz-6.12.*-siwdebug with headers.
set -euo pipefail

_pick() { # glob-pattern -> newest kver with image + headers
	local pat=$1 f k best=
	for f in /boot/vmlinuz-$pat; do
		[[ -e $f ]] || continue
		k=${f#/boot/vmlinuz-}
		[[ -r $f && -e /lib/modules/$k/build/Makefile ]] || continue
		best+="$k"$'\n'
	done
	[[ -n $best ]] || return 1
	printf '%s' "$best" | sort -V | tail -n1
}

kernel_kver() {
	case $1 in
	stock) _pick '*-amd64' || { echo "no stock kernel: need /boot/vmlinuz-*-amd64 and matching linux-headers (run scripts/deps.sh)" >&2; return 1; } ;;
	debug) _pick '6.12.*-siwdebug' || { echo "debug kernel not installed (no /boot/vmlinuz-6.12.*-siwdebug with headers; debs expected in ../shared/kernels or \$SIW_SHARED/kernels)" >&2; return 1; } ;;
	*) echo "unknown kernel name '$1' (stock|debug)" >&2; return 2 ;;
	esac
}

# Guest memory in MiB for a kver (debug kernel needs >= 3 GiB for KASAN).
kernel_mem() { case $1 in *siwdebug*) echo 3072 ;; *) echo 2048 ;; esac; }
kernel_is_debug() { [[ $1 == *siwdebug* ]]; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-list} in
	list) for n in stock debug; do k=$(kernel_kver "$n" 2>/dev/null) && echo "$n $k"; done; true ;;
	names) echo "stock debug" ;;
	kver) kernel_kver "${2:?name}" ;;
	mem) kernel_mem "${2:?kver}" ;;
	*) echo "usage: $0 list|names|kver NAME|mem KVER" >&2; exit 2 ;;
	esac
fi
