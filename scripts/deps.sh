#!/usr/bin/env bash
# Idempotently install every Debian package the build and the tests need,
# plus the debug kernel .debs from ../shared/kernels (or $SIW_SHARED/kernels).
# Quiet when everything is present; prints what it installs.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive

pkgs=(
	build-essential make gcc flex bison bc libelf-dev libssl-dev dwarves rsync dpkg-dev
	mmdebstrap xz-utils zstd
	linux-source-6.1 linux-image-amd64 linux-headers-amd64
	qemu-system-x86 busybox-static kmod cpio iproute2 iputils-ping python3 procps coreutils
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	libibverbs-dev librdmacm-dev iperf3 nvme-cli tshark tcpdump fio sparse nfs-kernel-server
	gnuplot-nox linux-perf qperf libfabric-bin
	open-iscsi openmpi-bin libopenmpi-dev ksmbd-tools cifs-utils xfsprogs
	multipath-tools sg3-utils gawk
	mandoc groff man-db systemd
	# scripts/cross.sh: the module for arm64, ppc64el and s390x; the pattern
	# test run for s390x (big-endian) under qemu-user
	gcc-aarch64-linux-gnu gcc-powerpc64le-linux-gnu gcc-s390x-linux-gnu
	libc6-dev-s390x-cross qemu-user-static
	# the guests of those architectures (scripts/cross.sh kernel|root|tools,
	# scripts/vm.sh --arch): their emulators, mmdebstrap's foreign-root
	# check, the C libraries the test tools are cross-built with
	qemu-system-arm qemu-system-ppc qemu-system-misc arch-test
	libc6-dev-arm64-cross libc6-dev-ppc64el-cross
)

installed() { # pkg -> 0 if installed
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

SUDO=
[[ $(id -u) -eq 0 ]] || SUDO=sudo

missing=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
if ((${#missing[@]})); then
	echo "deps: installing: ${missing[*]}"
	$SUDO apt-get update -qq
	# tshark asks whether non-root may capture; answer no without a prompt.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/siw-deps-apt.log 2>&1 ||
		{ tail -n 40 /tmp/siw-deps-apt.log >&2; echo "deps: apt-get install failed" >&2; exit 1; }
fi

# The stock kernel metapackage pulls the current ABI; make sure the image's
# own headers are there too (resolved at run time, never pinned).
abi=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null | grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -n1 || true)
if [[ -n $abi ]]; then
	hdr=${abi/linux-image-/linux-headers-}
	if ! installed "$hdr"; then
		echo "deps: installing $hdr"
		$SUDO apt-get install -y -qq --no-install-recommends "$hdr" >/tmp/siw-deps-apt.log 2>&1 ||
			{ tail -n 40 /tmp/siw-deps-apt.log >&2; exit 1; }
	fi
fi

# Debug kernel from shared/kernels.
shared=${SIW_SHARED:-}
if [[ -z $shared ]]; then
	gtop=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null || echo "$top")
	shared=$gtop/../shared
fi
kdir=$shared/kernels
[[ -d $kdir ]] || kdir=$shared   # accept SIW_SHARED pointing at kernels/ itself
debs=()
shopt -s nullglob
for d in "$kdir"/linux-image-*-siwdebug_*.deb "$kdir"/linux-headers-*-siwdebug_*.deb; do
	name=$(dpkg-deb -f "$d" Package)
	ver=$(dpkg-deb -f "$d" Version)
	cur=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$name" 2>/dev/null || true)
	[[ $cur == "installed $ver" ]] || debs+=("$d")
done
if ((${#debs[@]})); then
	echo "deps: installing debug kernel: ${debs[*]##*/}"
	$SUDO dpkg -i "${debs[@]}" >/tmp/siw-deps-dpkg.log 2>&1 ||
		{ tail -n 40 /tmp/siw-deps-dpkg.log >&2; echo "deps: dpkg -i failed" >&2; exit 1; }
fi
exit 0
