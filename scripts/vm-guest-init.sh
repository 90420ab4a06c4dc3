#!/bin/bash
# Stage 2 init: PID 1 in the guest's overlay root (started by
# scripts/initramfs-init). Sets up the system, runs the guest command
# described by <run dir>/env (kernel argument siwvm.run=) as root in the
# project tree, reports its exit status (console marker "@@SIWVM-EXIT rc=N"
# and file <run dir>/rc),
# dumps dmesg / kmemleak, then powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
umask 022

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	# init must never exit (that panics the kernel); while the power-off
	# runs even exec may fail, so keep looping
	while :; do sleep 5 2>/dev/null || :; done
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# /tmp, /run, /var/tmp: tmpfs, mounted by initramfs-init before the tree
# (a checkout under /tmp stays visible)
mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp
mountpoint -q /run || mount -t tmpfs -o mode=0755 tmpfs /run
mountpoint -q /var/tmp || mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mkdir -p /run/lock /run/netns
echo "vm-guest-init: mounts done, uptime $(cut -d" " -f1 /proc/uptime)"
modprobe -q configfs 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
echo 1 >/proc/sys/kernel/sysrq

rundir=
for w in $(</proc/cmdline); do
	case $w in siwvm.run=*) rundir=${w#siwvm.run=} ;; esac
done
if [[ -z $rundir || ! -r $rundir/env ]]; then
	echo "vm-guest-init: no run directory (siwvm.run=$rundir)"
	echo "@@SIWVM-EXIT rc=251"
	poweroff_now
fi
vm_timeout=600 vm_cmd=()
# shellcheck disable=SC1091
source "$rundir/env"   # exports the passed SIW_* env; sets vm_timeout, vm_cmd

host=siw-${SIW_ROLE:-vm}
hostname "$host"
echo "127.0.1.1 $host" >>/etc/hosts
ip link set lo up
if [[ -n ${SIW_MY_IP:-} ]]; then
	ip link set eth0 up
	ip addr add "$SIW_MY_IP/24" dev eth0
fi

kmemleak=/sys/kernel/debug/kmemleak
if [[ -w $kmemleak ]]; then
	# Forget what boot left behind; only leaks from the run count.
	echo scan >"$kmemleak" 2>/dev/null
	echo clear >"$kmemleak" 2>/dev/null
	# No automatic scans (every 10 min, each tens of seconds of a CPU
	# under TCG, in the middle of a case): the cases that check for leaks
	# scan when they check, and the scans below end every boot.
	echo scan=off >"$kmemleak" 2>/dev/null
fi

echo "@@SIWVM-START $(date +%s) uptime=$(cut -d' ' -f1 /proc/uptime) host=$(hostname) kernel=$(uname -r)"
cd "$SIW_TOP" || { echo "@@SIWVM-EXIT rc=252"; poweroff_now; }
# The command runs as root in its own session; hard guest-side timeout.
timeout -k 10 "$vm_timeout" "${vm_cmd[@]}" </dev/null
rc=$?
[[ $rc -eq 124 ]] && echo "vm-guest-init: guest command timed out after ${vm_timeout}s"
cd /

if [[ -w $kmemleak ]]; then
	echo "vm-guest-init: kmemleak scan"
	echo scan >"$kmemleak" 2>/dev/null
	sleep 2
	echo scan >"$kmemleak" 2>/dev/null
	# Prefixed so the host's log scanner sees the report lines.
	sed 's/^/kmemleak-report: /' "$kmemleak"
fi
# scripts/coverage.sh: keep this boot's gcov counters of the modules built
# in this tree (a module's counters outlive its unload), one directory per
# boot (and role)
if [[ ${SIW_GCOV:-} == 1 && -d /sys/kernel/debug/gcov$SIW_TOP ]]; then
	gdir=$SIW_TOP/build/gcov/$(uname -r)/$(basename "${SIW_RESULTS:-run}" .results)${SIW_ROLE:+.$SIW_ROLE}
	rm -rf "$gdir"
	mkdir -p "$gdir"
	while IFS= read -r f; do
		rel=${f#/sys/kernel/debug/gcov"$SIW_TOP"/build/*/}
		mkdir -p "$gdir/$(dirname "$rel")"
		cat "$f" >"$gdir/$rel"
	done < <(find "/sys/kernel/debug/gcov$SIW_TOP/build" -name '*.gcda')
	echo "vm-guest-init: gcov data of $(find "$gdir" -name '*.gcda' | wc -l) object(s) in $gdir"
fi
dmesg >"$rundir/dmesg.txt" 2>/dev/null
echo "$rc" >"$rundir/rc"
sync
echo "@@SIWVM-EXIT rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff_now
