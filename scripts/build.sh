#!/usr/bin/env bash
# Build the module for one kernel: scripts/build.sh KVER
# Copies the module sources (top-level *.c *.h Kbuild Makefile Kconfig,
# include/, tests/kunit/) into build/KVER/ and runs make there with W=1
# against the kernel's headers (installed, extracted, or inside the trixie
# build root: scripts/kernels.sh); a compiler warning fails the build.
# Result: build/KVER/*.ko
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/kernels.sh
source "$top/scripts/kernels.sh"
kver=${1:?usage: build.sh KVER}
kdir=$(kernel_kdir "$kver")
[[ -e $(kernel_kdir_host "$kver")/Makefile ]] || { echo "build.sh: no kernel headers at $(kernel_kdir_host "$kver")" >&2; exit 1; }
out=$top/build/$kver
mkdir -p "$out"
[[ -e $top/Makefile || -e $top/Kbuild ]] || { echo "build.sh: no Makefile/Kbuild at $top (module sources missing)" >&2; exit 1; }
# Only source files are included; --delete drops stale sources but keeps
# build products (excluded files are never deleted). No -t: a changed file
# gets the copy's time, so make rebuilds it even when the source is older
# than the object of its previous version (a header edited before the last
# build of another tree); unchanged files, by checksum, are not touched.
rsync -rlp --checksum --delete \
	--include='/*.c' --include='/*.h' --include='/Kbuild' --include='/Makefile' \
	--include='/Kconfig' --include='/VERSION' --include='/include/***' \
	--include='/tests/' --include='/tests/kunit/***' \
	--exclude='*' "$top/" "$out/"
jobs=$(nproc 2>/dev/null || echo 2)
((jobs <= 2)) || jobs=2
blog=$out/make.log
make -C "$out" -j"$jobs" KDIR="$kdir" SIW_ROOT="$(kernel_root "$kver")" W=1 2>&1 | tee "$blog"
grep -q 'warning:' "$blog" && { echo "build.sh: compiler warnings with W=1 (see above)" >&2; exit 1; }
shopt -s nullglob
kos=("$out"/*.ko "$out"/*/*.ko "$out"/tests/kunit/*.ko)
[[ ${#kos[@]} -gt 0 ]] || { echo "build.sh: make succeeded but produced no .ko" >&2; exit 1; }
# Flatten: every module also available as build/KVER/NAME.ko
for k in "${kos[@]}"; do
	[[ $(dirname "$k") == "$out" ]] || cp -f "$k" "$out/"
done
[[ -e $out/siw.ko ]] || { echo "build.sh: siw.ko not produced" >&2; exit 1; }
ls "$out"/*.ko

# Module index as the guest will see it after tests/lib/lib.sh siw_install
# (our *.ko in updates/): depmod is run here, natively, because in the
# guest it reads every module of the kernel over 9p (minutes under TCG).
mi=$out/modindex
rm -rf "$mi"
mkdir -p "$mi/lib/modules/$kver/updates"
moddir=$(kernel_moddir "$kver")
for e in "$moddir"/*; do
	b=$(basename "$e")
	case $b in modules.order | modules.builtin | modules.builtin.modinfo) cp "$e" "$mi/lib/modules/$kver/" ;;
	modules.* | build | source | updates) ;;
	*) ln -s "$e" "$mi/lib/modules/$kver/$b" ;;
	esac
done
cp "$out"/*.ko "$mi/lib/modules/$kver/updates/"
depmod -b "$mi" "$kver"
# the links point at host paths; the guest sees the same module tree at
# /lib/modules/KVER (vm.sh mounts an extracted one there)
