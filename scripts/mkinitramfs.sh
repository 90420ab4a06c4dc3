#!/usr/bin/env bash
# Build (cached) the VM initramfs for KVER; prints its path.
# Contents: busybox-static, the kernel's virtio/9p/overlay/virtio-net modules
# (absent when built in, e.g. the debug kernel), scripts/initramfs-init.
# Rebuilt when the kernel, busybox or the init script change.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/kernels.sh
source "$top/scripts/kernels.sh"
# --arch ARCH: the kernel of scripts/cross.sh kernel ARCH (arm64, ppc64el,
# s390x), its modules, and the busybox of that architecture's root
# (build/cross/ARCH/rootfs, scripts/cross.sh root ARCH)
busybox=/bin/busybox
if [[ ${1:-} == --arch ]]; then
	a=${2:?usage: mkinitramfs.sh --arch ARCH}
	base=$top/build/cross/$a/kernel
	[[ -r $base/.siw-ready ]] || { echo "mkinitramfs.sh: no $a kernel (scripts/cross.sh kernel $a)" >&2; exit 1; }
	read -r kver _ <"$base/.siw-ready"
	moddir=$base/lib/modules/$kver
	image=$("$top/scripts/cross.sh" image "$a")
	busybox=$top/build/cross/$a/rootfs/bin/busybox
	[[ -x $busybox ]] || { echo "mkinitramfs.sh: no $busybox (scripts/cross.sh root $a)" >&2; exit 1; }
else
	kver=${1:?usage: mkinitramfs.sh KVER | --arch ARCH}
	# extracted kernels (build/kernels/KVER) have their module tree there
	base=$(kernel_modbase "$kver")
	moddir=$(kernel_moddir "$kver")
	image=$(kernel_image "$kver")
fi
cache=$top/build/vm
mkdir -p "$cache"
out=$cache/initramfs-$kver.cpio.gz
mods=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	9pnet 9pnet_virtio netfs fscache 9p overlay failover net_failover virtio_net)
key=$( {
	stat -L -c '%n %s %Y' "$image" "$moddir/modules.dep" "$busybox"
	cat "$top/scripts/initramfs-init" "$top/scripts/mkinitramfs.sh"
} | sha256sum | cut -d' ' -f1)
if [[ -e $out && -e $out.key && $(cat "$out.key") == "$key" ]]; then
	echo "$out"; exit 0
fi
work=$(mktemp -d "$cache/initramfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,mods,dev,proc,sys}
cp "$busybox" "$work/bin/busybox"
cp "$top/scripts/initramfs-init" "$work/init"
chmod 755 "$work/init"
: >"$work/modules.list"
declare -A seen=()
for m in "${mods[@]}"; do
	while read -r what path _; do
		[[ $what == insmod ]] || continue
		b=$(basename "$path")
		[[ -n ${seen[$b]:-} ]] && continue
		seen[$b]=1
		case $b in
		*.ko) cp "$path" "$work/mods/$b" ;;
		*.ko.xz) xz -dc "$path" >"$work/mods/${b%.xz}"; b=${b%.xz} ;;
		*.ko.zst) zstd -qdc "$path" >"$work/mods/${b%.zst}"; b=${b%.zst} ;;
		*.ko.gz) gzip -dc "$path" >"$work/mods/${b%.gz}"; b=${b%.gz} ;;
		esac
		echo "$b" >>"$work/modules.list"
	done < <(modprobe ${base:+-d "$base"} -S "$kver" --show-depends "$m" 2>/dev/null || true)
done
(cd "$work" && find . -mindepth 1 | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv -f "$out.tmp" "$out"
echo "$key" >"$out.key"
echo "$out"
