#!/usr/bin/env bash
# The module cross-built for the other Debian architectures that run RDMA,
# against Debian 12's own 6.1 headers for each (newest in bookworm,
# bookworm-updates and bookworm-security), with W=1 and sparse (C=2,
# -D__CHECK_ENDIAN__); any warning fails.
#
#   scripts/cross.sh fetch [ARCH..]   headers of the newest 6.1 for ARCH
#   scripts/cross.sh build ARCH       build/cross/ARCH/siw.ko (make.log
#                                     and the time taken, seconds, beside it)
#   scripts/cross.sh all              fetch + build for every ARCH
#   scripts/cross.sh arches           the ARCHes: arm64 ppc64el s390x
#   scripts/cross.sh kernel ARCH      Debian's kernel of those headers,
#                                     build/cross/ARCH/kernel
#   scripts/cross.sh image ARCH       its bootable image's path
#   scripts/cross.sh root ARCH        a Debian 12 root of ARCH for guests,
#                                     build/cross/ARCH/rootfs (mmdebstrap)
#   scripts/cross.sh tools ARCH       the suite's verbs tools for ARCH,
#                                     build/cross/ARCH/bin
# scripts/vm.sh --arch ARCH boots a guest of ARCH from those.
#
# Nothing is installed on the host (only the cross compilers, by
# scripts/deps.sh): the .debs are read with a private apt state and cached
# in $SIW_CROSS_CACHE (/var/cache/siw-cross), then extracted with dpkg-deb
# into a private root per ARCH, build/cross/ARCH/root. The headers' Makefile
# includes the common tree by absolute path (rewritten into the root), and
# their scripts/ link points at linux-kbuild-6.1, the kernel's host tools
# (fixdep, modpost, genksyms): the amd64 build of that package, of the very
# version of the headers, is extracted there, so those tools run here.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SIW_CROSS_CACHE:-/var/cache/siw-cross}
state=$top/build/cross
arches=(arm64 ppc64el s390x)

# Debian architecture -> kernel ARCH, CROSS_COMPILE, header flavour
karch() { case $1 in arm64) echo arm64 ;; ppc64el) echo powerpc ;; s390x) echo s390 ;; esac; }
kcross() { case $1 in arm64) echo aarch64-linux-gnu- ;; ppc64el) echo powerpc64le-linux-gnu- ;; s390x) echo s390x-linux-gnu- ;; esac; }
kflavour() { case $1 in arm64) echo arm64 ;; ppc64el) echo powerpc64le ;; s390x) echo s390x ;; esac; }
known() { [[ " ${arches[*]} " == *" $1 "* ]] || { echo "cross.sh: unknown architecture '$1' (${arches[*]})" >&2; return 1; }; }

die() { echo "cross.sh: $*" >&2; exit 1; }

_mirror() { # main|sec -> URIs: of the host's sources (as scripts/kernels.sh)
	local f=/etc/apt/sources.list.d/debian.sources want=$1
	[[ -r $f ]] || return 1
	awk -v w="$want" '/^URIs:/ { for (i = 2; i <= NF; i++) if ((w == "sec") == ($i ~ /security/)) { print $i; exit } }' "$f"
}

# The private apt: bookworm, -updates, -security for amd64 (the host
# tools) and the foreign architectures; lists updated once per run.
apt_o=()
apt_setup() {
	((${#apt_o[@]})) && return 0
	local u s a=$cache/apt opt
	u=$(_mirror main) || true
	[[ -n $u ]] || { echo "cross.sh: no URIs: in /etc/apt/sources.list.d/debian.sources" >&2; return 1; }
	s=$(_mirror sec) || true
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$cache/debs"
	opt="arch=amd64,${arches[*]} signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
	opt=${opt// /,}
	{
		echo "deb [$opt] $u bookworm main"
		echo "deb [$opt] $u bookworm-updates main"
		[[ -z $s ]] || echo "deb [$opt] $s bookworm-security main"
	} >"$a/sources.list"
	apt_o=(-o "Dir::Etc::SourceList=$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o Dir::Cache::pkgcache=
		-o Dir::Cache::srcpkgcache= -o APT::Architecture=amd64 -o APT::Sandbox::User=root)
	local x
	for x in amd64 "${arches[@]}"; do apt_o+=(-o "APT::Architectures::=$x"); done
	apt-get "${apt_o[@]}" -qq update >"$a/update.log" 2>&1 || {
		tail -n 3 "$a/update.log" >&2
		echo "cross.sh: apt-get update of the private bookworm lists failed" >&2
		apt_o=()
		return 1
	}
}

# newest VERSION of PKG for ARCH in the private lists
newest() { # PKG ARCH
	apt-cache "${apt_o[@]}" madison "$1:$2" |
		awk -F'|' -v a="$2" '$3 ~ (" " a " Packages") { gsub(/ /, "", $2); print $2 }' | sort -V | tail -n1
}

# get PKG ARCH VERSION: the .deb in the cache (downloaded once), its path
get() {
	local f=$cache/debs/${1}_${3}_${2}.deb
	if [[ ! -s $f ]]; then
		(cd "$cache/debs" && apt-get "${apt_o[@]}" -qq download "$1:$2=$3") >"$cache/download.log" 2>&1 ||
			{ tail -n 3 "$cache/download.log" >&2; echo "cross.sh: download of $1:$2=$3 failed" >&2; return 1; }
	fi
	[[ -s $f ]] || { echo "cross.sh: $f missing after download" >&2; return 1; }
	echo "$f"
}

fetch() { # ARCH: headers of its newest 6.1 under build/cross/ARCH/root
	local a=$1 fl meta k ver kb d=$state/$1 f debs=()
	fl=$(kflavour "$a")
	if ! apt_setup; then
		# offline: keep headers fetched before
		[[ -e $d/root/.siw-ready ]] || die "$a: cannot fetch its headers"
		echo "$a $(<"$d/root/.siw-ready") (refresh failed, kept)"
		return 0
	fi
	meta=$(newest "linux-headers-$fl" "$a")
	[[ -n $meta ]] || die "no linux-headers-$fl for $a in bookworm"
	# (awk reads all its input: a pipe closed early is an error here)
	k=$(apt-cache "${apt_o[@]}" show "linux-headers-$fl:$a=$meta" |
		awk -v f="$fl" '/^Depends: / && !k { if (match($0, "linux-headers-6\\.1[^ ,]*-" f)) k = substr($0, RSTART + 14, RLENGTH - 14) }
			END { print k }')
	[[ -n $k ]] || die "linux-headers-$fl:$a=$meta depends on no 6.1 headers"
	ver=$(newest "linux-headers-$k" "$a")
	[[ -n $ver ]] || die "no linux-headers-$k for $a"
	# the host tools: amd64's linux-kbuild-6.1 of the same version
	kb=$(apt-cache "${apt_o[@]}" madison linux-kbuild-6.1:amd64 |
		awk -F'|' -v v="$ver" '{ gsub(/ /, "", $2) } $2 == v && $3 ~ / amd64 Packages/ { k = $2 } END { print k }')
	[[ -n $kb ]] || die "no amd64 linux-kbuild-6.1 $ver (the host tools of the $a headers $ver)"
	if [[ -e $d/root/.siw-ready && $(<"$d/root/.siw-ready") == "$k $ver" ]]; then
		echo "$a $k $ver (cached)"
		return 0
	fi
	f=$(get "linux-headers-$k" "$a" "$ver") && debs+=("$f") || exit 1
	f=$(get "linux-headers-${k%-"$fl"}-common" all "$ver") && debs+=("$f") || exit 1
	f=$(get linux-kbuild-6.1 amd64 "$ver") && debs+=("$f") || exit 1
	mkdir -p "$d"
	rm -rf "$d/root.tmp"
	mkdir -p "$d/root.tmp"
	for f in "${debs[@]}"; do dpkg-deb -x "$f" "$d/root.tmp" || die "dpkg-deb -x $f failed"; done
	local h=$d/root.tmp/usr/src/linux-headers-$k
	[[ -e $h/Makefile && -x $h/scripts/basic/fixdep && -x $h/scripts/mod/modpost ]] ||
		die "$a: $h lacks Makefile or the host tools (scripts -> $(readlink "$h/scripts" || echo none))"
	file -b "$h/scripts/mod/modpost" 2>/dev/null | grep -q x86-64 ||
		die "$a: $h/scripts/mod/modpost is not an amd64 program"
	# the flavour's Makefile includes the common tree by absolute path
	sed -i "s|^include /usr/src/|include $d/root/usr/src/|" "$h/Makefile"
	echo "$k $ver" >"$d/root.tmp/.siw-ready"
	rm -rf "$d/root"
	mv "$d/root.tmp" "$d/root"
	echo "$a $k $ver"
}

build() { # ARCH: build/cross/ARCH/siw.ko, W=1 + sparse, any warning fails
	local a=$1 d=$state/$1 k ver kdir cc t lg
	[[ -e $d/root/.siw-ready ]] || die "$a: no headers (scripts/cross.sh fetch $a)"
	read -r k ver <"$d/root/.siw-ready"
	kdir=$d/root/usr/src/linux-headers-$k
	cc=$(kcross "$a")
	command -v "${cc}gcc" >/dev/null || die "${cc}gcc missing (scripts/deps.sh installs it)"
	command -v sparse >/dev/null || die "sparse missing (scripts/deps.sh installs it)"
	# sparse reports only what it compiles: every object afresh
	rm -rf "$d/siw" "$d/siw.ko"
	mkdir -p "$d/siw"
	# the module's sources as scripts/build.sh copies them
	rsync -rlp --checksum --delete \
		--include='/*.c' --include='/*.h' --include='/Kbuild' --include='/Makefile' \
		--include='/Kconfig' --include='/VERSION' --include='/include/***' \
		--include='/tests/' --include='/tests/kunit/***' \
		--exclude='*' "$top/" "$d/siw/"
	lg=$d/make.log
	# Debian's check that the compiler is the kernel's compares the
	# version strings, which differ in name for a cross compiler; the
	# same upstream gcc is checked here instead
	local want have
	want=$(sed -n 's/^CONFIG_GCC_VERSION=//p' "$kdir/include/config/auto.conf")
	have=$("${cc}gcc" -dumpfullversion | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
	# seconds: wall clock, then CPU (user + system); the host is shared
	local TIMEFORMAT='%R %U %S' rc=0 wall u sy
	{ time make -C "$d/siw" -j2 KDIR="$kdir" SIW_TOP="$top" ARCH="$(karch "$a")" CROSS_COMPILE="$cc" \
		DEBIAN_KERNEL_NO_CC_VERSION_CHECK=1 check >"$lg" 2>&1 || rc=$?; } 2>"$d/time"
	if ((rc)); then
		tail -n 30 "$lg" >&2
		die "$a: build failed (see $lg)"
	fi
	read -r wall u sy <"$d/time"
	t=$(awk -v w="$wall" -v u="$u" -v s="$sy" 'BEGIN { printf "%.0f s (CPU %.0f s)", w, u + s }')
	echo "$t" >"$d/seconds"
	[[ $want == "$have" ]] || echo "cross.sh: $a: note: the kernel was built with gcc $want, ${cc}gcc is $have" >&2
	if grep -q 'sparse is not available' "$lg"; then
		die "$a: kbuild could not run sparse (see $lg)"
	fi
	if grep -E 'warning:|error:' "$lg" >&2; then
		die "$a: warnings with W=1/sparse (above; $lg)"
	fi
	[[ -e $d/siw/siw.ko ]] || die "$a: no siw.ko produced (see $lg)"
	cp "$d/siw/siw.ko" "$d/siw.ko"
	echo "$a $k: $(file -b "$d/siw.ko" | cut -d, -f1-2), $t: $d/siw.ko"
}

# kernel ARCH: Debian's own kernel of the headers' very version (the module
# build/cross/ARCH/siw.ko is built for it), image and module tree under
# build/cross/ARCH/kernel, its modules.dep made here (depmod reads the
# foreign modules; the package leaves that to its postinst)
kernel() {
	local a=$1 d=$state/$1 k ver f out
	[[ -e $d/root/.siw-ready ]] || die "$a: no headers (scripts/cross.sh fetch $a)"
	read -r k ver <"$d/root/.siw-ready"
	out=$d/kernel
	if [[ -e $out/.siw-ready && $(<"$out/.siw-ready") == "$k $ver" ]]; then
		echo "$a kernel $k $ver (cached)"
		return 0
	fi
	apt_setup || die "$a: cannot reach the archive for its kernel"
	# arm64's signed image package holds the same files as -unsigned
	f=$(get "linux-image-$k-unsigned" "$a" "$ver" 2>/dev/null) || f=$(get "linux-image-$k" "$a" "$ver") || exit 1
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	dpkg-deb -x "$f" "$out.tmp" || die "dpkg-deb -x $f failed"
	[[ -d $out.tmp/lib/modules/$k ]] || die "$a: $f has no lib/modules/$k"
	depmod -b "$out.tmp" "$k" || die "$a: depmod of $k failed"
	echo "$k $ver" >"$out.tmp/.siw-ready"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	echo "$a kernel $k $ver: $(kimage "$a")"
}
# kimage ARCH: the bootable image of build/cross/ARCH/kernel
kimage() {
	local k
	read -r k _ <"$state/$1/kernel/.siw-ready"
	# ppc64el boots the ELF vmlinux; the others their vmlinuz
	if [[ -e $state/$1/kernel/boot/vmlinux-$k ]]; then echo "$state/$1/kernel/boot/vmlinux-$k"
	else echo "$state/$1/kernel/boot/vmlinuz-$k"; fi
}

# The guest root of ARCH, build/cross/ARCH/rootfs: Debian 12 of that
# architecture made by mmdebstrap (its maintainer scripts run under
# qemu-user: binfmt_misc entries are registered from
# /usr/lib/binfmt.d when missing), with what the cases run there, and the
# module tree of build/cross/ARCH/kernel. Made again when the package list
# or the kernel changes.
root_pkgs=bash,coreutils,util-linux,mount,hostname,iproute2,kmod,procps,psmisc,iputils-ping,busybox-static,gawk,
root_pkgs+=rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,libibverbs-dev,librdmacm-dev,
root_pkgs+=nvme-cli,tshark,tcpdump
qarch() { case $1 in arm64) echo aarch64 ;; ppc64el) echo ppc64le ;; s390x) echo s390x ;; esac; }
binfmt() { # ARCH: qemu-user registered for its binaries
	local b=/proc/sys/fs/binfmt_misc q
	q=$(qarch "$1")
	[[ -e $b/register ]] || mount -t binfmt_misc binfmt_misc "$b" || die "cannot mount binfmt_misc"
	[[ -e $b/qemu-$q ]] && return 0
	[[ -r /usr/lib/binfmt.d/qemu-$q.conf ]] || die "no /usr/lib/binfmt.d/qemu-$q.conf (qemu-user-static)"
	cat "/usr/lib/binfmt.d/qemu-$q.conf" >"$b/register" || die "cannot register qemu-$q with binfmt_misc"
}
root() {
	local a=$1 d=$state/$1 k u key t0=$SECONDS
	[[ -e $d/kernel/.siw-ready ]] || die "$a: no kernel (scripts/cross.sh kernel $a)"
	read -r k _ <"$d/kernel/.siw-ready"
	key="$root_pkgs $(<"$d/kernel/.siw-ready")"
	if [[ -e $d/rootfs/.siw-root && $(<"$d/rootfs/.siw-root") == "$key" ]]; then
		echo "$a root (cached)"
		return 0
	fi
	binfmt "$a"
	u=$(_mirror main) || true
	[[ -n $u ]] || die "no URIs: in /etc/apt/sources.list.d/debian.sources"
	rm -rf "$d/rootfs.tmp"
	mmdebstrap --quiet --mode=root --variant=apt --architectures="$a" --include="$root_pkgs" \
		bookworm "$d/rootfs.tmp" "$u" >"$d/mmdebstrap.log" 2>&1 ||
		{ tail -n 5 "$d/mmdebstrap.log" >&2; die "$a: mmdebstrap failed (see $d/mmdebstrap.log)"; }
	mkdir -p "$d/rootfs.tmp/lib/modules"
	cp -a "$d/kernel/lib/modules/$k" "$d/rootfs.tmp/lib/modules/"
	echo "$key" >"$d/rootfs.tmp/.siw-root"
	rm -rf "$d/rootfs"
	mv "$d/rootfs.tmp" "$d/rootfs"
	echo "$a root: $(du -sh "$d/rootfs" | cut -f1), $((SECONDS - t0)) s"
}
# tools ARCH: the suite's verbs tools for ARCH (build/cross/ARCH/bin),
# cross-compiled against the libraries of its root
tools() {
	local a=$1 d=$state/$1 r cc m
	r=$d/rootfs
	[[ -e $r/.siw-root ]] || die "$a: no root (scripts/cross.sh root $a)"
	cc=$(kcross "$a")
	m=$(basename "$(dirname "$(find "$r/usr/lib" -maxdepth 2 -name 'libibverbs.so' | head -n1)")")
	[[ -n $m && $m != lib ]] || die "$a: no libibverbs.so in $r"
	mkdir -p "$d/bin"
	make -C "$top/tests/tools" -j2 tools OUT="$d/bin" CC="${cc}gcc" \
		CPPFLAGS="-I$r/usr/include" LDFLAGS="-L$r/usr/lib/$m -Wl,-rpath-link=$r/usr/lib/$m" \
		>"$d/tools.log" 2>&1 || { tail -n 20 "$d/tools.log" >&2; die "$a: tools build failed (see $d/tools.log)"; }
	echo "$a tools: $(find "$d/bin" -type f | wc -l) in $d/bin"
}

case ${1:-} in
arches) echo "${arches[*]}" ;;
root | tools)
	[[ -n ${2:-} ]] || die "usage: $0 $1 ARCH"
	known "$2" || exit 2
	"$1" "$2"
	;;
kernel)
	[[ -n ${2:-} ]] || die "usage: $0 kernel ARCH"
	known "$2" || exit 2
	kernel "$2"
	;;
image)
	known "${2:-}" || exit 2
	kimage "$2"
	;;
fetch)
	shift
	(($#)) || set -- "${arches[@]}"
	for a; do known "$a" || exit 2; fetch "$a"; done
	;;
build)
	[[ -n ${2:-} ]] || die "usage: $0 build ARCH"
	known "$2" || exit 2
	build "$2"
	;;
all)
	# each architecture on its own: one that fails does not stop the rest
	apt_setup || true
	rc=0
	for a in "${arches[@]}"; do (fetch "$a" && build "$a") || rc=1; done
	exit $rc
	;;
*) echo "usage: $0 fetch [ARCH..]|build ARCH|kernel ARCH|image ARCH|root ARCH|tools ARCH|all|arches" >&2; exit 2 ;;
esac
