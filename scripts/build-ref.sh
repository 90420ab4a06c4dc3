#!/usr/bin/env bash
# Reference peer: the kernel's own siw, for interop tests and benchmarks.
#
# usage: scripts/build-ref.sh [-q] [KVER]     (default KVER: the stock kernel)
#
# Result: build/ref/KVER/siw.ko (build/ is git-ignored; the reference is
# never vendored into the repository). Prints the path on stdout.
#
#  - Kernel ships siw in-tree (the debug kernel 6.12.*-siwdebug does:
#    /lib/modules/KVER/kernel/drivers/infiniband/sw/siw/siw.ko[.xz|.zst|.gz]):
#    copied (decompressed) from there.
#  - Otherwise (stock Debian kernels: CONFIG_RDMA_SIW is not set): built from
#    Debian's linux-source-MAJ.MIN (/usr/src/linux-source-MAJ.MIN.tar.xz;
#    installed with apt-get when missing), extracting only
#    drivers/infiniband/sw/siw into build/ref/KVER/src, against
#    /lib/modules/KVER/build.
# Idempotent: a stamp (source tarball + headers identity) makes a rerun with
# nothing changed a no-op (well under a second).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quiet=0
[[ ${1:-} == -q ]] && { quiet=1; shift; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
kver=${1:-}
if [[ -z $kver ]]; then
	kver=$("$top/scripts/kernels.sh" kver stock)
fi
say() { ((quiet)) || echo "build-ref: $*" >&2; }
die() { echo "build-ref: $*" >&2; exit 1; }

out=$top/build/ref/$kver
ko=$out/siw.ko
stamp=$out/.stamp
mkdir -p "$out"

# ---- in-tree reference (debug kernel) -----------------------------------
intree=
for f in /lib/modules/"$kver"/kernel/drivers/infiniband/sw/siw/siw.ko{,.xz,.zst,.gz}; do
	[[ -e $f ]] && { intree=$f; break; }
done
if [[ -n $intree ]]; then
	want="intree $(stat -c '%s %Y' "$intree") $intree"
	if [[ -e $ko && -e $stamp && $(<"$stamp") == "$want" ]]; then
		say "up to date: $ko (copy of $intree)"
		echo "$ko"; exit 0
	fi
	case $intree in
	*.xz) xz -dc "$intree" >"$ko.tmp" ;;
	*.zst) zstd -qdc "$intree" >"$ko.tmp" ;;
	*.gz) gzip -dc "$intree" >"$ko.tmp" ;;
	*) cp -f "$intree" "$ko.tmp" ;;
	esac
	mv -f "$ko.tmp" "$ko"
	echo "$want" >"$stamp"
	say "copied the in-tree reference $intree -> $ko"
	echo "$ko"; exit 0
fi

# ---- build from linux-source --------------------------------------------
kdir=/lib/modules/$kver/build
[[ -e $kdir/Makefile ]] || die "no kernel headers at $kdir (scripts/deps.sh)"
# MAJ.MIN from KVER (6.1.0-57-amd64 -> 6.1; 6.12.9+bpo-amd64 -> 6.12)
mm=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$kver")
pkg=linux-source-$mm
tarball=/usr/src/$pkg.tar.xz
if [[ ! -e $tarball ]]; then
	say "$tarball missing: installing $pkg"
	command -v apt-get >/dev/null || die "$tarball missing and no apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >&2; } ||
		die "cannot install $pkg"
	[[ -e $tarball ]] || die "$pkg installed but $tarball not found"
fi
# Headers identity: kernel release string and the exported symbol versions.
hdr_id() {
	local f
	for f in "$kdir"/include/config/kernel.release "$kdir"/Module.symvers; do
		[[ -e $f ]] && stat -L -c '%n %s %Y' "$f"
	done
}
want="src $(stat -c '%s %Y' "$tarball") $tarball | $(hdr_id | tr '\n' ' ')"
if [[ -e $ko && -e $stamp && $(<"$stamp") == "$want" ]]; then
	say "up to date: $ko (from $tarball)"
	echo "$ko"; exit 0
fi
# Version check (informational): the source package vs the headers package.
srcver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
hdrver=$(dpkg-query -S "$kdir" 2>/dev/null | head -n1 | cut -d: -f1 | xargs -r dpkg-query -W -f='${Version}' 2>/dev/null || true)
say "building the reference siw for $kver from $pkg ${srcver:-?} (headers ${hdrver:-?})"
[[ -z $srcver || -z $hdrver || $srcver == "$hdrver" ]] ||
	say "WARNING: $pkg $srcver differs from the headers' package version $hdrver"

src=$out/src
rm -rf "$src" "$out/extract"
mkdir -p "$out/extract"
sub=drivers/infiniband/sw/siw
# Only the siw directory; xz still decompresses the whole stream (~30 s).
tar -xJf "$tarball" -C "$out/extract" --wildcards "$pkg/$sub/*" ||
	die "extracting $sub from $tarball failed"
mv "$out/extract/$pkg/$sub" "$src"
rm -rf "$out/extract"
[[ -e $src/Makefile && -e $src/siw_main.c ]] || die "no siw sources in $tarball"
jobs=$(nproc 2>/dev/null || echo 2)
log=$out/build.log
if ! make -C "$kdir" M="$src" CONFIG_RDMA_SIW=m -j"$jobs" modules >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	die "build failed (full log: $log)"
fi
[[ -e $src/siw.ko ]] || die "make succeeded but $src/siw.ko is missing (log: $log)"
cp -f "$src/siw.ko" "$ko"
echo "$want" >"$stamp"
say "built $ko ($(modinfo -F vermagic "$ko"))"
echo "$ko"
