#!/usr/bin/env bash
# The applications phase of scripts/bench-guest.sh (sourced there;
# scripts/bench.sh --apps): NVMe over Fabrics against its own TCP
# transport, in one guest. One nvmet target with a null_blk namespace has
# two ports on 10.89.1.1 (veth ap0, init netns: the kernel ULPs' rdma_cm
# ids live there): rdma (4420) and tcp (4421). Each round, the host side
# takes turns (the order rotates round by round):
#   ours  nvme-rdma over this module (siw0 on ap0)
#   ref   nvme-rdma over the kernel's siw, same boot
#   tcp   nvme-tcp to the same target
# and runs fio (libaio, direct, SIW_BENCH_APPS_SECS s a job, 8) on the
# namespace: 4k random read and write at QD1 and QD32, 128k sequential
# read and write at QD8. Rows: $SIW_BENCH_OUT/apps.tsv (median and ratios:
# scripts/bench-apps-report.py). Then, per implementation, one QD1 4k
# random read of a fixed number of I/Os under perf record -a of the
# scheduler, work queue, softirq and IPI tracepoints (hops_count):
# profile-apps-hops-IMPL.txt, events per I/O, both sides in one guest.
# shellcheck disable=SC2154 # out, hz, impls, hops_events: bench-guest.sh's

apps_ip=10.89.1.1
apps_nqn=nqn.2014-08.org.siw.bench
apps_cfs=/sys/kernel/config/nvmet
apps_secs=${SIW_BENCH_APPS_SECS:-8}
apps_rounds=${SIW_BENCH_APPS_ROUNDS:-3}
# name fio-arguments
apps_jobs=(
	"rr4k_qd1 --rw=randread --bs=4k --iodepth=1"
	"rw4k_qd1 --rw=randwrite --bs=4k --iodepth=1"
	"rr4k_qd32 --rw=randread --bs=4k --iodepth=32"
	"rw4k_qd32 --rw=randwrite --bs=4k --iodepth=32"
	"sr128k_qd8 --rw=read --bs=128k --iodepth=8"
	"sw128k_qd8 --rw=write --bs=128k --iodepth=8"
)

# apps_target_up: null_blk (no memory: the transport is measured, not a
# copy), the subsystem, the tcp port; the rdma port comes with a device
apps_target_up() {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	modprobe null_blk nr_devices=1 gb=1 || return 1
	modprobe -a nvmet nvmet_tcp nvmet_rdma nvme_tcp nvme_rdma || return 1
	ip link add ap0 type veth peer name ap1 && ip link set ap0 up && ip link set ap1 up &&
		ip addr add $apps_ip/24 dev ap0 || return 1
	local s=$apps_cfs/subsystems/$apps_nqn
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" &&
		echo -n /dev/nullb0 >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" || return 1
	apps_port 2 tcp 4421
}
# apps_port N TRTYPE SVCID: nvmet port N on $apps_ip, the subsystem linked
apps_port() {
	local p=$apps_cfs/ports/$1
	mkdir "$p" && echo "$2" >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo $apps_ip >"$p/addr_traddr" && echo "$3" >"$p/addr_trsvcid" &&
		ln -s "$apps_cfs/subsystems/$apps_nqn" "$p/subsystems/$apps_nqn" &&
		wait_for 10 tcp_listening "$3"
}
apps_port_del() { # N
	local p=$apps_cfs/ports/$1
	[[ -d $p ]] || return 0
	rm -f "$p/subsystems/$apps_nqn"
	rmdir "$p"
}
# apps_dev: the namespace's block device of the one controller
apps_dev() {
	local b
	for b in /sys/block/nvme*n1; do
		[[ -e $b && $(basename "$b") != *c*n* ]] && { echo "/dev/$(basename "$b")"; return 0; }
	done
	return 1
}
# apps_up IMPL: the host side connected; sets apps_blk
apps_up() {
	local tr=rdma port=4420
	if [[ $1 == tcp ]]; then
		tr=tcp port=4421
	else
		impl_up "$1" quiet || return 1
		rdma link add siw0 type siw netdev ap0 || { impl_down "$1"; return 1; }
		wait_for 15 test "$(ibdev_port_state siw0)" = PORT_ACTIVE || { apps_down "$1"; return 1; }
		apps_port 1 rdma 4420 || { log "apps $1: no rdma port"; apps_down "$1"; return 1; }
	fi
	timeout 60 nvme connect -t $tr -n $apps_nqn -a $apps_ip -s $port -i 2 >/dev/null 2>&1 ||
		{ log "apps $1: nvme connect -t $tr failed"; apps_down "$1"; return 1; }
	wait_for 20 apps_dev || { log "apps $1: no namespace"; apps_down "$1"; return 1; }
	apps_blk=$(apps_dev)
}
apps_down() {
	timeout 60 nvme disconnect -n $apps_nqn >/dev/null 2>&1
	wait_for 30 eval '! apps_dev >/dev/null'
	[[ $1 == tcp ]] && return 0
	apps_port_del 1
	rdma link delete siw0 2>/dev/null
	impl_down "$1"
}
# apps_fio IMPL ROUND NAME ARGS...: one fio job -> a row of apps.tsv
apps_fio() {
	local impl=$1 r=$2 name=$3 c0 c1 t0 t1
	shift 3
	c0=$(cpu_now) t0=$(now)
	fio --name="$name" --filename="$apps_blk" --direct=1 --ioengine=libaio \
		--time_based --runtime="$apps_secs" --ramp_time=1 --norandommap --randrepeat=0 \
		--size=1g --output-format=json "$@" >/tmp/apps.json 2>/tmp/apps.err
	local rc=$?
	c1=$(cpu_now) t1=$(now)
	python3 "$SIW_TOP/scripts/bench-apps-row.py" "$impl" "$r" "$name" "$rc" "$c0" "$c1" "$t0" "$t1" "$hz" \
		/tmp/apps.json >>"$out/apps.tsv" || log "apps $impl $name: no row ($(tail -n 2 /tmp/apps.err | tr '\n' ' '))"
	log "apps r$r $(tail -n 1 "$out/apps.tsv" | cut -f1,3-8 | tr '\t' ' ')"
}
# apps_hops IMPL: events per I/O of one QD1 4k random read stream
apps_hops() {
	local n
	perf_ready || return
	n=$(sc 2000)
	perf record -q -a "${hops_events[@]}" -o /tmp/hops.data -- \
		fio --name=hops --filename="$apps_blk" --direct=1 --ioengine=libaio --rw=randread \
		--bs=4k --iodepth=1 --number_ios="$n" --size=1g --norandommap --randrepeat=0 \
		--output-format=terse --terse-version=3 >/tmp/apps-hops.txt 2>&1
	{
		echo "# $1: perf record -a of scheduler, work queue, softirq, IPI and system call tracepoints during $n fio 4k random reads at QD1 (host and target in one guest, both vCPUs)"
		echo "## $n I/Os (fio read IOPS under perf: $(cut -d';' -f8 /tmp/apps-hops.txt | tail -n 1))"
		hops_count "$n" I/O
	} >"$out/profile-apps-hops-$1.txt"
	log "apps hops $1: $(sed -n 3p "$out/profile-apps-hops-$1.txt")"
	rm -f /tmp/hops.data
}
bench_apps() {
	local impls_apps=() order r i j impl
	for impl in $impls; do
		[[ $impl == ours || $impl == ref || $impl == tcp ]] && impls_apps+=("$impl")
	done
	printf 'impl\tround\tjob\tstatus\tiops\tmib_s\tlat_mean_us\tclat_p50_us\tcpu_total_s\tcpu_kernel_s\twall_s\n' >"$out/apps.tsv"
	command -v fio >/dev/null && command -v nvme >/dev/null || { log "apps: needs fio and nvme-cli"; return; }
	apps_target_up || { log "apps: target setup failed: $(dmesg | tail -n 3 | tr '\n' ' ')"; return; }
	for r in $(seq "$apps_rounds"); do
		order=()
		for i in "${!impls_apps[@]}"; do
			order+=("${impls_apps[(i + r - 1) % ${#impls_apps[@]}]}")
		done
		for impl in "${order[@]}"; do
			apps_up "$impl" || continue
			for j in "${apps_jobs[@]}"; do
				# shellcheck disable=SC2086 # the job's arguments
				apps_fio "$impl" "$r" $j
			done
			((r == 1)) && apps_hops "$impl"
			apps_down "$impl"
		done
	done
}
