#!/usr/bin/env bash
# Boot a kernel under qemu and run a guest script in it as root.
#
# usage: scripts/vm.sh [options] [--] SCRIPT [ARGS...]
#   SCRIPT      path of the guest script inside the project tree (relative
#               to the tree top, or absolute); run with `cd` to the tree top.
#   --kernel K  a name of scripts/kernels.sh (stock, bookworm-bpo, trixie,
#               trixie-bpo, debug) or a KVER (default: stock)
#   --pair      two guests on one L2 link (qemu -netdev socket over
#               127.0.0.1, free port); both run SCRIPT with SIW_ROLE=a|b,
#               SIW_MY_IP/SIW_PEER_IP = 10.77.0.1 / 10.77.0.2 on eth0.
#   --nodes N   N guests (3..9) on one L2 segment: qemu -netdev socket
#               with a multicast group on 127.0.0.1 (group and port
#               chosen per run); roles a, b, c, ...; SIW_MY_IP
#               10.77.0.<n>, SIW_PEER_IP a's for the others and b's for
#               a, SIW_NODE_IPS all of them in role order, SIW_NODES=N.
#   --timeout S hard wall-clock limit per VM in seconds (default 900);
#               qemu is killed after it.
#   --log FILE  console log (default build/vm/logs/<kver>-<time>.log); in
#               pair and nodes mode one per role: <base>.a.log, <base>.b.log
#   --mem MIB   guest memory (default 2048; debug kernel >= 3072)
#   --env V=X   a variable for the guest (repeatable)
#   --env-only  the guest gets the --env variables only (tests/run); without
#               it, of the caller's environment only the variables of the
#               allow-list below are passed as well (each one named on
#               stderr), never any other SIW_* variable:
#               SIW_GCOV (scripts/coverage.sh), SIW_DEMO_TRAFFIC
#               (scripts/demo.sh), SIW_BENCH_* (scripts/bench.sh)
#   -q          do not stream the console to stdout (log file only)
#   --arch A    boot Debian's own kernel of another architecture (arm64,
#               ppc64el, s390x: scripts/cross.sh kernel A) with the root
#               of that architecture (build/cross/A/rootfs, scripts/cross.sh
#               root A) in place of the host's /; its test tools
#               (build/cross/A/bin) are mounted on tests/bin. --kernel is
#               then ignored for the roles A boots.
#   --arch-b A  in pair mode, role b's architecture (default: --arch's);
#               amd64 is the host's own (the --kernel kernel)
#
# SIW_VM_APPEND: extra kernel command line arguments (scripts/bench.sh's
# --clock hpet puts clocksource=hpet there, which wins over the default).
#
# The guest's clock is the TSC (clocksource=tsc tsc=reliable, what Linux
# uses on hardware) where the host's own clock is its TSC. Under TCG a
# guest's TSC is the host's raw TSC (qemu absorbs backward steps only): a
# host whose kernel does not trust its TSC (a VM host, whose TSC jumps
# when it is paused or moved; this project's machines run kvm-clock with
# tsc=unstable) passes each jump on, and every guest timer fires at once
# (seen: the debug guest's clock leapt 43165 s in a case, 504 -> 43669 s,
# and its cases "timed out"). There the guest keeps the HPET, which qemu
# drives from the host's monotonic clock. SIW_VM_APPEND's clocksource=
# comes later and wins. Under TCG the kernel otherwise finds the vCPUs' TSCs
# unsynchronized and falls back to the emulated HPET: every clock read a
# device access under qemu's global lock, TCP's per-segment timestamps
# and every timer included, and perftest's start-up calibration (a loop
# of clock reads) misses its window often enough to need repeats.
#
# Guest environment: SIW_TOP (tree, same path as on the host), SIW_KERNEL
# (the kernel's name, see --kernel), SIW_ROLE/SIW_MY_IP/SIW_PEER_IP in pair
# mode, plus passed variables.
#
# Exit status: the guest script's status; 124 = wall-clock timeout (qemu
# killed); 125 = guest ended without reporting a status (crash/panic);
# 126 = setup error; 200 = the kernel log scan found a problem (Oops, BUG,
# WARNING, KASAN, lockdep, kmemleak, ... see scripts/logscan.sh).
# Pair and nodes mode: 200 if any scan failed, else the first non-zero of
# the roles in order.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/kernels.sh
source "$top/scripts/kernels.sh"

# qemu_of ARCH: the system emulator of a Debian architecture
qemu_of() {
	case $1 in
	amd64) echo qemu-system-x86_64 ;;
	arm64) echo qemu-system-aarch64 ;;
	ppc64el) echo qemu-system-ppc64 ;;
	s390x) echo qemu-system-s390x ;;
	esac
}

kernel=stock pair=0 nodes=1 wall=900 log='' mem='' quiet=0 env_only=0 arch=amd64 arch_b=
extra_env=()
while (($#)); do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--pair) pair=1; shift ;;
	--nodes) nodes=$2; shift 2 ;;
	--timeout) wall=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--env) extra_env+=("$2"); shift 2 ;;
	--env-only) env_only=1; shift ;;
	-q | --quiet) quiet=1; shift ;;
	--arch) arch=$2; shift 2 ;;
	--arch-b) arch_b=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "vm.sh: unknown option $1" >&2; exit 126 ;;
	*) break ;;
	esac
done
(($#)) || { echo "vm.sh: no guest script given" >&2; exit 126; }
[[ $nodes =~ ^[1-9]$ ]] || { echo "vm.sh: --nodes takes 1..9" >&2; exit 126; }
((nodes == 2)) && pair=1
((pair)) && nodes=2
script=$1; shift
[[ $script == /* ]] || script=$top/$script
[[ -e $script ]] || { echo "vm.sh: no such guest script: $script" >&2; exit 126; }
[[ $script == "$top"/* ]] || { echo "vm.sh: guest script must be inside $top" >&2; exit 126; }

((pair)) && [[ -n $arch_b ]] || arch_b=$arch
for a in "$arch" "$arch_b"; do
	case $a in amd64 | arm64 | ppc64el | s390x) ;; *) echo "vm.sh: --arch takes amd64, arm64, ppc64el or s390x, not '$a'" >&2; exit 126 ;; esac
done

# the other architectures: kernel, initramfs, root (scripts/cross.sh)
declare -A f_kver=() f_image=() f_initrd=()
for a in "$arch" "$arch_b"; do
	[[ $a != amd64 && -z ${f_kver[$a]:-} ]] || continue
	[[ -r $top/build/cross/$a/kernel/.siw-ready ]] || { echo "vm.sh: no $a kernel (scripts/cross.sh kernel $a)" >&2; exit 126; }
	[[ -x $top/build/cross/$a/rootfs/bin/bash ]] || { echo "vm.sh: no $a root (scripts/cross.sh root $a)" >&2; exit 126; }
	read -r f_kver[$a] _ <"$top/build/cross/$a/kernel/.siw-ready"
	f_image[$a]=$("$top/scripts/cross.sh" image "$a")
	f_initrd[$a]=$("$top/scripts/mkinitramfs.sh" --arch "$a") || { echo "vm.sh: $a initramfs build failed" >&2; exit 126; }
	command -v "$(qemu_of "$a")" >/dev/null || { echo "vm.sh: $(qemu_of "$a") missing (scripts/deps.sh)" >&2; exit 126; }
done

if [[ $arch != amd64 && $arch_b != amd64 ]]; then
	# no amd64 guest: nothing of the host's kernels is needed
	kver=${f_kver[$arch]} image='' kname=$arch moddir='' modarg='' initrd=''
	[[ -n $mem ]] || mem=2048
else
if [[ " $(kernel_names) " == *" $kernel "* ]]; then
	kver=$(kernel_kver "$kernel") || exit 126
else
	kver=$kernel
fi
image=$(kernel_image "$kver")
[[ -r $image ]] || { echo "vm.sh: no kernel image $image" >&2; exit 126; }
kname=$(kernel_name "$kver")
# a kernel extracted under build/kernels: the guest mounts its module tree
# at /lib/modules/KVER (scripts/initramfs-init)
moddir=$(kernel_moddir "$kver") modarg=
[[ $moddir == /lib/modules/* ]] || modarg=" siwvm.moddir=$moddir"
[[ -n $mem ]] || mem=$(kernel_mem "$kver")
command -v qemu-system-x86_64 >/dev/null || { echo "vm.sh: qemu-system-x86_64 missing (scripts/deps.sh)" >&2; exit 126; }

initrd=$("$top/scripts/mkinitramfs.sh" "$kver") || { echo "vm.sh: initramfs build failed" >&2; exit 126; }
fi

# Guest-side timeout leaves room for boot and shutdown.
boot_allow=90 cpu=max
# The debug kernel boots slower, and runs with 4-level paging (la57=off):
# with 5-level, its KASAN reported a wild access when an interrupt came
# while identify_cpu() had cleared the boot CPU's feature bits (LA57 among
# them): "wild-memory-access in do_raw_spin_lock" from handle_edge_irq, RIP
# in identify_cpu, task swapper/0, at an ff11... (5-level direct map)
# address. The others keep 5-level paging: under TCG they ran 25-40%
# slower without it (scripts/bench.sh, TCP and ours alike).
[[ $kname == debug ]] && boot_allow=300 cpu=max,la57=off
gtimeout=$((wall - boot_allow))
((gtimeout >= 30)) || gtimeout=30
host_clock=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
if [[ $host_clock == tsc ]]; then
	guest_clock="clocksource=tsc tsc=reliable"
else
	guest_clock="clocksource=hpet"
fi
echo "vm.sh: guest clock ${guest_clock%% *} (the host's is $host_clock)" >&2

accel=(-accel 'tcg,thread=multi')
# KVM only if usable: /dev/kvm and hardware virtualisation flags (a /dev/kvm
# without vmx/svm exists here and hangs). SIWVM_ACCEL=kvm|tcg overrides.
if [[ ${SIWVM_ACCEL:-} == kvm ]] || { [[ -z ${SIWVM_ACCEL:-} && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; }; then
	accel=(-accel kvm)
fi

ts=$(date +%Y%m%d-%H%M%S)
mkdir -p "$top/build/vm/logs" "$top/build/vm/runs"
[[ -n $log ]] || log=$top/build/vm/logs/$kver-$ts.log
mkdir -p "$(dirname "$log")"

pids=() tails=() rundirs=()
# shellcheck disable=SC2317
cleanup() {
	local p
	for p in "${pids[@]}" "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${rundirs[@]}"; do rm -rf "$p"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The caller's variables a guest gets without --env-only: the allow-list
# (a SIW_* variable not on it stays on the host, whatever it is set to)
pass_env=()
if ((!env_only)); then
	while IFS= read -r v; do
		case $v in
		SIW_GCOV | SIW_DEMO_TRAFFIC | SIW_BENCH_*) pass_env+=("$v=${!v}") ;;
		SIW_VM_APPEND) ;;
		SIW_*) echo "vm.sh: $v is not passed to the guest (not in the allow-list; --env $v=... passes it)" >&2 ;;
		esac
	done < <(compgen -e)
	((${#pass_env[@]} == 0)) || echo "vm.sh: passed to the guest from the environment: ${pass_env[*]}" >&2
fi

# write_env RUNDIR ROLE: the guest's env file (sourced by vm-guest-init.sh):
# exported variables for the guest command (the allow-listed ones of the
# caller, then --env), and vm_timeout / vm_cmd for vm-guest-init.sh itself
write_env() {
	local rd=$1 role=$2 va=$3 v kn=$kname
	shift 3
	[[ $va == amd64 ]] || kn=$va
	{
		for v in "${pass_env[@]}" "${extra_env[@]}"; do printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"; done
		printf 'export SIW_TOP=%q SIW_KERNEL=%q SIW_ARCH=%q\n' "$top" "$kn" "$va"
		if [[ -n $role ]]; then
			local me peer=1 i ips=''
			me=$(($(printf '%d' "'$role") - 96))
			((me == 1)) && peer=2
			printf 'export SIW_ROLE=%s SIW_MY_IP=10.77.0.%s SIW_PEER_IP=10.77.0.%s\n' "$role" "$me" "$peer"
			if ((nodes > 2)); then
				for ((i = 1; i <= nodes; i++)); do ips+="${ips:+ }10.77.0.$i"; done
				printf 'export SIW_NODES=%s SIW_NODE_IPS=%q\n' "$nodes" "$ips"
			fi
		fi
		printf 'vm_timeout=%q\n' "$gtimeout"
		printf 'vm_cmd=(%q' bash; printf ' %q' "$script" "$@"; printf ')\n'
	} >"$rd/env"
}

# start_vm ROLE ARCH LOG NETARGS... : boot one guest in the background
# (NETARGS name virtio-net-pci; a ccw machine gets virtio-net-ccw)
start_vm() {
	local role=$1 va=$2 lg=$3; shift 3
	local rd q mach=() con=(-serial chardev:con) tty dev=pci kimg=$image ird=$initrd root=/ app vk=$kver
	case $va in
	amd64)
		mach=(-machine q35 -cpu "$cpu") tty=ttyS0
		app="mitigations=off no_timer_check $guest_clock$modarg" ;;
	arm64)
		# pauth-impdef: the cheap pointer-auth hash under TCG
		mach=(-machine virt -cpu "max,pauth-impdef=on") tty=ttyAMA0 app="mitigations=off" ;;
	ppc64el)
		# TCG has no speculation controls to offer: say so, no warnings
		mach=(-machine "pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off")
		tty=hvc0 app="mitigations=off" ;;
	s390x)
		mach=(-machine s390-ccw-virtio -cpu max) con=(-device "sclpconsole,chardev=con")
		tty=ttysclp0 dev=ccw app="mitigations=off" ;;
	esac
	if [[ $va != amd64 ]]; then
		kimg=${f_image[$va]} ird=${f_initrd[$va]} vk=${f_kver[$va]}
		root=$top/build/cross/$va/rootfs app+=" siwvm.bin=build/cross/$va/bin"
	fi
	q=$(qemu_of "$va")
	rd=$(mktemp -d "$top/build/vm/runs/${vk}-${role:-x}.XXXXXX")
	rundirs+=("$rd")
	write_env "$rd" "$role" "$va" "${guest_args[@]}"
	: >"$lg"
	timeout -k 10 "$wall" "$q" "${accel[@]}" \
		"${mach[@]}" -smp 2 -m "$mem" \
		-nodefaults -display none -monitor none -no-reboot \
		-chardev "file,id=con,path=$lg" "${con[@]}" \
		-kernel "$kimg" -initrd "$ird" \
		-append "console=$tty loglevel=5 printk.time=1 panic=-1 rcupdate.rcu_cpu_stall_timeout=300 $app siwvm.tree=$top siwvm.run=$rd${SIW_VM_APPEND:+ $SIW_VM_APPEND}" \
		-fsdev "local,id=r,path=$root,security_model=none,readonly=on,multidevs=remap" \
		-device "virtio-9p-$dev,fsdev=r,mount_tag=hostroot" \
		-fsdev "local,id=t,path=$top,security_model=none,multidevs=remap" \
		-device "virtio-9p-$dev,fsdev=t,mount_tag=tree" \
		-device "virtio-rng-$dev" \
		"${@/virtio-net-pci/virtio-net-$dev}" </dev/null >>"$lg.qemu" 2>&1 &
	pids+=($!)
	last_pid=$! last_rd=$rd
	if ((!quiet)); then
		tail -n +1 -F --pid="$last_pid" "$lg" 2>/dev/null | sed -u "s/^/${role:+[$role] }/" &
		tails+=($!)
	fi
}

# finish ROLE PID RUNDIR LOG -> sets vm_rc
finish() {
	local role=$1 pid=$2 rd=$3 lg=$4 qrc=0 grc=
	wait "$pid" || qrc=$?
	cp -f "$rd/dmesg.txt" "$lg.dmesg" 2>/dev/null || rm -f "$lg.dmesg"
	if [[ -s $rd/rc ]]; then
		grc=$(<"$rd/rc")
	else
		grc=$(tr -d '\r' <"$lg" | sed -n 's/^@@SIWVM-EXIT rc=\([0-9]*\).*/\1/p' | tail -n1)
	fi
	local tag=${role:+ [$role]}
	if [[ $qrc -eq 124 || $qrc -eq 137 ]]; then
		echo "vm.sh$tag: wall-clock timeout (${wall}s): qemu killed; log $lg" >&2
		vm_rc=124
	elif [[ -z $grc ]]; then
		echo "vm.sh$tag: guest ended without an exit status (qemu rc=$qrc; crash/panic?); log $lg" >&2
		[[ -s $lg.qemu ]] && sed 's/^/  qemu: /' "$lg.qemu" | tail -n 5 >&2
		vm_rc=125
	else
		vm_rc=$grc
	fi
	if ! scan=$("$top/scripts/logscan.sh" "$lg" "$lg.dmesg"); then
		echo "vm.sh$tag: kernel log scan found problems:" >&2
		printf '%s\n' "$scan" | sed 's/^/  /' >&2
		vm_rc=200
	fi
}

guest_args=("$@")
t0=$(date +%s)
if ((pair)); then
	base=${log%.log}
	loga=$base.a.log logb=$base.b.log
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	start_vm a "$arch" "$loga" -netdev "socket,id=n0,listen=127.0.0.1:$port" -device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:01
	pa=$last_pid rda=$last_rd
	for _ in $(seq 100); do
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	start_vm b "$arch_b" "$logb" -netdev "socket,id=n0,connect=127.0.0.1:$port" -device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:02
	pb=$last_pid rdb=$last_rd
	finish a "$pa" "$rda" "$loga"; rca=$vm_rc
	finish b "$pb" "$rdb" "$logb"; rcb=$vm_rc
	if [[ $rca -eq 200 || $rcb -eq 200 ]]; then rc=200
	elif [[ $rca -ne 0 ]]; then rc=$rca
	else rc=$rcb; fi
	echo "vm.sh: $kver pair done in $(($(date +%s) - t0))s: a rc=$rca b rc=$rcb; logs $loga $logb" >&2
elif ((nodes > 2)); then
	# one L2 segment for N guests: each qemu joins a multicast group on
	# 127.0.0.1 and sees every frame the others send (a hub)
	base=${log%.log}
	port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	group=239.77.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
	roles=() npids=() nrds=() nlogs=()
	for ((i = 1; i <= nodes; i++)); do
		r=$(printf "\\$(printf '%03o' $((96 + i)))")
		roles+=("$r")
		start_vm "$r" "$arch" "$base.$r.log" -netdev "socket,id=n0,mcast=$group:$port,localaddr=127.0.0.1" \
			-device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:0$i
		npids+=("$last_pid") nrds+=("$last_rd") nlogs+=("$base.$r.log")
	done
	rc=0 first=0 sum=''
	for i in "${!roles[@]}"; do
		finish "${roles[$i]}" "${npids[$i]}" "${nrds[$i]}" "${nlogs[$i]}"
		sum+=" ${roles[$i]} rc=$vm_rc"
		if ((vm_rc == 200)); then rc=200
		elif ((vm_rc != 0 && first == 0)); then first=$vm_rc; fi
	done
	((rc == 200)) || rc=$first
	echo "vm.sh: $kver $nodes nodes done in $(($(date +%s) - t0))s:$sum; logs $base.[${roles[*]}].log" >&2
else
	start_vm "" "$arch" "$log"
	finish "" "$last_pid" "$last_rd" "$log"; rc=$vm_rc
	echo "vm.sh: $kver done in $(($(date +%s) - t0))s: rc=$rc; log $log" >&2
fi
sleep 0.2  # let the console tail drain
exit "$rc"
