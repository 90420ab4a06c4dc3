#!/usr/bin/env bash
# Helpers for the kernel-ULP cases (tests/cases/ulp/, tests/cases/pair-ulp/):
# NVMe over Fabrics (nvmet-rdma target, nvme-rdma host) and NFS over RDMA
# (knfsd + svcrdma, client xprtrdma) on siw. A library (tests/lib), not a case.
# Source AFTER tests/lib/lib.sh and tests/lib/caselib.sh:
#   source "$(dirname "$0")/../../lib/lib.sh"
#   source "$SIW_TOP/tests/lib/caselib.sh"
#   source "$SIW_TOP/tests/lib/ulp-lib.sh"
#
# Kernel ULPs open their rdma_cm ids in the initial netns, so every address
# used here lives in the init netns: one guest uses siw0 on the veth end
# ulp0 (10.89.1.1/24, peer ulp1 up and address-less) and connects to its own
# address (the TCP connection runs over loopback; rdma_cm resolves the
# device through ulp0's hardware address). lo itself cannot carry siw for
# rdma_cm (zero GID, no device match). Pair groups use eth0 (10.77.0.x).

ULP_NQN_BASE=nqn.2014-08.org.siw.test
NVMET_CFS=/sys/kernel/config/nvmet
NULLB_CFS=/sys/kernel/config/nullb
ULP_PORT=4420
ULP_LOCAL_IP=10.89.1.1

# ---- generic ---------------------------------------------------------------
ulp_configfs() {
	[[ -d /sys/kernel/config ]] || fail "no /sys/kernel/config (CONFIGFS_FS)"
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config ||
		fail "cannot mount configfs"
}
# ulp_mod MOD [PARAMS...]: modprobe, skip only if the kernel lacks it
ulp_mod() {
	local m=$1
	modinfo "$m" >/dev/null 2>&1 || skip "kernel $(uname -r) has no module $m"
	modprobe "$@" || fail "modprobe $* failed: $(dmesg | tail -n 5)"
}
ulp_dmesg_tail() { dmesg | tail -n "${1:-30}" | sed 's/^/[dmesg] /'; }
# ulp_fail MSG: fail with the kernel's recent lines (siw device logs included)
ulp_fail() {
	echo "---- dmesg (last 40) ----" >&2
	dmesg | tail -n 40 >&2
	fail "$*"
}
# step: one concise progress line with the elapsed case time
step() { printf '## [%3ds] %s\n' "$SECONDS" "$*"; }

# ulp_siw_local: siw0 on veth end ulp0 (10.89.1.1) in the init netns; sets
# ULP_IP/RDEV. Our siw is loaded (siw_load checks it is the out-of-tree one).
ulp_siw_local() {
	rdev_module_load
	ip link set lo up
	veth_pair ulp0 ulp1
	ip addr add "$ULP_LOCAL_IP/24" dev ulp0 || fail "ip addr add on ulp0"
	RDEV=${RDEV_PFX}0 ULP_IP=$ULP_LOCAL_IP
	rdev_add "$RDEV" ulp0
	wait_for 10 ping -c1 -W1 "$ULP_IP" || fail "no ping to $ULP_IP"
}
# ulp_siw_pair: siw0 on eth0 in a pair guest; ULP_IP = this guest's address
ulp_siw_pair() {
	[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
	rdev_module_load
	RDEV=${RDEV_PFX}0 ULP_IP=$SIW_MY_IP
	rdev_add "$RDEV" eth0
	wait_for 30 ping -c1 -W1 "$SIW_PEER_IP" || fail "no ping to peer $SIW_PEER_IP"
}

# (wait_for runs its arguments as a command: predicates, not "$(...)")
ulp_no_qps() { [[ $(ulp_rdma_qps) == 0 ]]; }
nvme_no_ctrl() { [[ -z $(nvme_ctrls "$1") ]]; }
nvme_has_ctrl() { [[ -n $(nvme_ctrls "$1") ]]; }
nvme_state_is() { [[ $(cat "/sys/class/nvme/$1/state" 2>/dev/null) == "$2" ]]; }
nvme_state_not() { ! nvme_state_is "$@"; }
# ulp_rdma_qps: number of kernel QPs (rdma res) on $RDEV; "rdma-failed"
# (no number: every count check and ulp_no_qps then fail) if rdma fails
ulp_rdma_qps() {
	local out
	out=$(res_show qp link "$RDEV/1") || { echo rdma-failed; return 0; }
	grep 'lqpn' <<<"$out" | grep -vc 'type GSI' || true
}

# ulp_barrier NAME [TIMEOUT]: pair_barrier on a fresh port per call (both
# roles call the same sequence). With one port, side a can pass a barrier
# that b has not reached: b's `nc -l` of the previous barrier still holds
# its listening socket while a's next connect lands in its backlog.
ULP_BARRIER_N=0
ulp_barrier() {
	ULP_BARRIER_N=$((ULP_BARRIER_N + 1))
	node_barrier "$1" "${2:-300}" $((46600 + ULP_BARRIER_N))
}

# ---- pattern data ----------------------------------------------------------
# ulp_pattern FILE BYTES [SEED]: deterministic pseudo-random bytes (AES-CTR
# keystream of the seed when openssl exists, else from /dev/urandom; either
# way FILE is the reference copy the checks compare against).
ulp_pattern() {
	local f=$1 n=$2 seed=${3:-siw-ulp}
	if command -v openssl >/dev/null 2>&1; then
		head -c "$n" /dev/zero | openssl enc -aes-128-ctr -nosalt -pass "pass:$seed" -pbkdf2 -iter 1 2>/dev/null >"$f"
	else
		head -c "$n" /dev/urandom >"$f"
	fi
	[[ $(stat -c %s "$f") == "$n" ]] || fail "pattern file $f: size $(stat -c %s "$f") != $n"
}

# ---- null_blk --------------------------------------------------------------
# nullb_create NAME SIZE_MB: memory-backed null_blk via configfs; sets
# NULLB_DEV to the /dev path (not for $(...): registers its cleanup). Data written stays readable (memory_backed=1).
nullb_create() {
	local n=$1 mb=$2 d idx
	ulp_configfs
	ulp_mod null_blk nr_devices=0
	[[ -d $NULLB_CFS ]] || fail "null_blk configfs missing"
	d=$NULLB_CFS/$n
	mkdir "$d" || fail "mkdir $d"
	on_exit "nullb_remove $n"
	echo "$mb" >"$d/size"
	echo 1 >"$d/memory_backed"
	echo 512 >"$d/blocksize"
	echo 1 >"$d/power" || fail "null_blk $n: power on failed"
	idx=$(<"$d/index")
	local dev=/dev/nullb$idx
	[[ -b /dev/$n ]] && dev=/dev/$n # kernels naming the disk after the dir
	wait_for 10 test -b "$dev" || fail "null_blk $n: $dev did not appear"
	NULLB_DEV=$dev
}
nullb_remove() {
	local d=$NULLB_CFS/$1
	[[ -d $d ]] || return 0
	echo 0 >"$d/power" 2>/dev/null
	rmdir "$d"
}

# ---- nvmet (target) --------------------------------------------------------
# nvmet_up NQN IP DEV[:buffered]...: subsystem NQN (allow_any_host) with one
# namespace per DEV (nsid 1, 2, ...; ":buffered" sets buffered_io for file
# backing), port 1 rdma/$NVMET_ADRFAM (ipv4 unless set) IP:$ULP_PORT linked
# to it. The nvmet_rdma module is loaded with $NVMET_RDMA_PARAMS.
nvmet_up() {
	local nqn=$1 ip=$2; shift 2
	ulp_configfs
	ulp_mod nvmet
	# shellcheck disable=SC2086
	ulp_mod nvmet_rdma ${NVMET_RDMA_PARAMS:-}
	on_exit nvmet_down
	local s=$NVMET_CFS/subsystems/$nqn nsid=0 spec dev
	mkdir "$s" || fail "mkdir $s"
	echo 1 >"$s/attr_allow_any_host"
	for spec in "$@"; do
		nsid=$((nsid + 1))
		dev=${spec%%:*}
		mkdir "$s/namespaces/$nsid"
		echo -n "$dev" >"$s/namespaces/$nsid/device_path"
		[[ $spec == *:buffered ]] && echo 1 >"$s/namespaces/$nsid/buffered_io"
		echo 1 >"$s/namespaces/$nsid/enable" || ulp_fail "nvmet: enabling namespace $nsid ($dev) failed"
	done
	local p=$NVMET_CFS/ports/1
	mkdir "$p"
	echo rdma >"$p/addr_trtype"
	echo "${NVMET_ADRFAM:-ipv4}" >"$p/addr_adrfam"
	echo "$ip" >"$p/addr_traddr"
	echo "$ULP_PORT" >"$p/addr_trsvcid"
	nvmet_link "$nqn" || ulp_fail "nvmet: linking port 1 to $nqn failed (rdma listener on $ip:$ULP_PORT)"
	if [[ $RDEV_LTYPE == siw ]]; then
		wait_for 10 tcp_listening "$ULP_PORT" ||
			ulp_fail "nvmet: no TCP listener on port $ULP_PORT (iWARP listen)"
	fi
	info "nvmet: $nqn, $nsid namespace(s), rdma $ip:$ULP_PORT"
}
nvmet_link() { ln -s "$NVMET_CFS/subsystems/$1" "$NVMET_CFS/ports/1/subsystems/$1"; }
nvmet_unlink() { rm -f "$NVMET_CFS/ports/1/subsystems/$1"; }
# nvmet_down: remove every port, subsystem and namespace; unload nvmet
nvmet_down() {
	[[ -d $NVMET_CFS ]] || return 0
	local p s n
	for p in "$NVMET_CFS"/ports/*/; do
		[[ -d $p ]] || continue
		rm -f "$p"subsystems/* 2>/dev/null
		rmdir "$p"
	done
	for s in "$NVMET_CFS"/subsystems/*/; do
		[[ -d $s ]] || continue
		for n in "$s"namespaces/*/; do
			[[ -d $n ]] || continue
			echo 0 >"$n/enable" 2>/dev/null
			rmdir "$n"
		done
		rmdir "$s"
	done
	modprobe -r nvmet_rdma 2>/dev/null
	modprobe -r nvmet 2>/dev/null
	return 0
}

# ---- nvme host -------------------------------------------------------------
# nvme_ctrls NQN: controller names (nvmeN) of rdma controllers for NQN
nvme_ctrls() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ -e $c/subsysnqn ]] || continue
		[[ $(<"$c/subsysnqn") == "$1" && $(<"$c/transport") == rdma ]] && basename "$c"
	done
	return 0
}
# nvme_ns_dev NQN NSID: /dev path of the block device of namespace NSID
# (native multipath head nvmeXnY or per-controller nvmeXnY)
nvme_ns_dev() {
	local nqn=$1 nsid=$2 b d
	for b in /sys/block/nvme*n*; do
		[[ -e $b/nsid ]] || continue
		[[ $(<"$b/nsid") == "$nsid" ]] || continue
		d=$(basename "$b")
		[[ $d == *c*n* ]] && continue # hidden per-path disk under a head
		# the disk belongs to NQN: via the subsystem (head) or controller
		local sys
		sys=$(readlink -f "$b/device")
		if [[ -e $sys/subsysnqn && $(<"$sys/subsysnqn") == "$nqn" ]]; then
			echo "/dev/$d"
			return 0
		fi
	done
	return 1
}
# nvme_host_connect NQN IP [NVME-CONNECT-OPTS...]: connect (2 I/O queues,
# reconnect every 1 s, give up after 60 s); sets NVME_CTRL
nvme_host_connect() {
	local nqn=$1 ip=$2; shift 2
	ulp_mod nvme_rdma
	local out rc=0
	out=$(timeout 60 nvme connect -t rdma -n "$nqn" -a "$ip" -s "$ULP_PORT" -i 2 \
		--reconnect-delay=1 --ctrl-loss-tmo=60 "$@" 2>&1) || rc=$?
	((rc == 0)) || ulp_fail "nvme connect -t rdma -n $nqn -a $ip -s $ULP_PORT failed (rc=$rc): $out"
	on_exit "nvme_host_disconnect $nqn"
	wait_for 20 nvme_has_ctrl "$nqn" || ulp_fail "no rdma controller for $nqn after connect"
	NVME_CTRL=$(nvme_ctrls "$nqn" | head -n1)
	wait_for 20 nvme_state_is "$NVME_CTRL" live ||
		ulp_fail "$NVME_CTRL not live: $(cat "/sys/class/nvme/$NVME_CTRL/state")"
	info "connected $NVME_CTRL ($(<"/sys/class/nvme/$NVME_CTRL/address")), queue_count $(cat "/sys/class/nvme/$NVME_CTRL/queue_count" 2>/dev/null || echo ?)"
}
nvme_host_disconnect() {
	local nqn=$1
	[[ -n $(nvme_ctrls "$nqn") ]] || return 0
	timeout 60 nvme disconnect -n "$nqn" >/dev/null 2>&1
	wait_for 30 nvme_no_ctrl "$nqn"
}
# nvme_wait_ns NQN NSID: wait for the namespace block device; prints it
nvme_wait_ns() {
	wait_for 20 nvme_ns_dev "$1" "$2" || ulp_fail "namespace $2 of $1 did not appear: $(ls /sys/block)"
	nvme_ns_dev "$1" "$2"
}
# nvme_ctrl_queues CTRL: I/O queue count = queue_count - 1 (admin queue)
nvme_ctrl_ioqueues() { echo $(($(<"/sys/class/nvme/$1/queue_count") - 1)); }

# ---- block I/O with verification -------------------------------------------
ULP_BS_LIST="512 4096 8192 65536 131072 1048576"
# blk_write_regions DEV PAT SIZE: write PAT (SIZE bytes) onto DEV with
# O_DIRECT, the device split into regions each written with one block size
# of $ULP_BS_LIST (512 B .. 1 MiB; sizes below the logical block size are
# raised to it); the small sizes get small regions. Prints one timing line.
blk_write_regions() {
	local dev=$1 pat=$2 size=$3 off=0 bs len cnt lbs t0 tl='' unit
	lbs=$(blockdev --getss "$dev")
	unit=$(scale 262144 65536) # region granularity
	for bs in $ULP_BS_LIST; do
		((bs >= lbs)) || bs=$lbs
		case $bs in
		512) len=$((size / 128)) ;;
		4096 | 8192) len=$((size / 16)) ;;
		65536 | 131072) len=$((size / 8)) ;;
		*) len=$((size - off)) ;;
		esac
		len=$((len / unit * unit))
		((len > 0)) || len=$unit
		((off + len <= size)) || len=$((size - off))
		((len > 0)) || break
		cnt=$(((len + bs - 1) / bs))
		t0=$SECONDS
		dd if="$pat" of="$dev" bs="$bs" skip="$off" seek="$off" count="$len" \
			iflag=skip_bytes,count_bytes oflag=direct,seek_bytes conv=notrunc,fsync status=none ||
			ulp_fail "dd write bs=$bs offset $off length $len to $dev failed"
		off=$((off + len))
		tl+=" ${bs}x$cnt:$((SECONDS - t0))s"
	done
	((off == size)) || fail "blk_write_regions covered $off of $size bytes"
	info "wrote $dev (lbs $lbs):$tl"
}
# blk_verify DEV PAT SIZE BS: read SIZE bytes back with O_DIRECT in BS-sized
# reads and compare with PAT
blk_verify() {
	local dev=$1 pat=$2 size=$3 bs=$4 out
	out=$(dd if="$dev" bs="$bs" count=$((size / bs)) iflag=direct status=none | cmp - "$pat" 2>&1) ||
		ulp_fail "read back of $dev (bs=$bs, $size bytes) differs from the pattern: $out"
}
# blk_verify_all DEV PAT SIZE: read everything back with each block size of
# $ULP_VERIFY_BS (default 1 MiB, 4 KiB, 128 KiB), compare
blk_verify_all() {
	local dev=$1 pat=$2 size=$3 bs
	for bs in ${ULP_VERIFY_BS:-$(scale "1048576 4096 131072" "1048576 4096")}; do
		blk_verify "$dev" "$pat" "$size" "$bs"
	done
}

# blk_concurrent DEV PAT SIZE: concurrent writers and readers on disjoint
# quarters, pinned one per CPU (so both I/O queues carry traffic):
# quarters 0/1 rewritten with new patterns by two writers while two readers
# verify quarters 2/3 (unchanged data of $PAT); then all four compared.
blk_concurrent() {
	local dev=$1 pat=$2 size=$3 q=$(($3 / 4)) ncpu i pids=() rc=0
	ncpu=$(nproc)
	local new=$TMPD/conc.pat
	ulp_pattern "$new" "$size" "conc-$RANDOM"
	# expected image: new data in quarters 0,1, old in 2,3
	{ head -c $((2 * q)) "$new"; tail -c +$((2 * q + 1)) "$pat"; } >"$TMPD/conc.exp"
	for i in 0 1; do
		taskset -c $((i % ncpu)) dd if="$new" of="$dev" bs=65536 skip=$((i * q / 65536)) \
			seek=$((i * q / 65536)) count=$((q / 65536)) oflag=direct conv=notrunc status=none &
		pids+=($!)
	done
	for i in 2 3; do
		taskset -c $((i % ncpu)) dd if="$dev" of="$TMPD/conc.r$i" bs=4096 skip=$((i * q / 4096)) \
			count=$((q / 4096)) iflag=direct status=none &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=$?; done
	((rc == 0)) || ulp_fail "concurrent dd on $dev failed (rc=$rc)"
	for i in 2 3; do
		cmp "$TMPD/conc.r$i" <(tail -c +$((i * q + 1)) "$pat" | head -c "$q") >/dev/null ||
			ulp_fail "concurrent reader of quarter $i read wrong data"
	done
	blk_verify "$dev" "$TMPD/conc.exp" "$size" 1048576
	cp "$TMPD/conc.exp" "$pat"
}

# ulp_fio NAME DEV SIZE [FIO-OPTS...]: fio write+verify (crc32c), direct,
# libaio, 2 jobs on disjoint halves, iodepth 8, mixed block sizes; output in
# $TMPD/NAME.fio; returns fio's status
ulp_fio() {
	local name=$1 dev=$2 size=$3; shift 3
	local half=$((size / 2))
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 \
		--numjobs=2 --size="$half" --offset_increment="$half" --rw=randwrite \
		--bsrange=4k-256k --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --randrepeat=0 --group_reporting --output-format=terse --terse-version=3 \
		"$@" >"$TMPD/$name.fio" 2>&1
}
# ulp_fio_check NAME RC: fail unless fio succeeded with no errors
ulp_fio_check() {
	local name=$1 rc=$2
	if ((rc != 0)) || grep -qiE 'verify|error|bad magic|crc32c' "$TMPD/$name.fio"; then
		sed 's/^/[fio] /' "$TMPD/$name.fio" | tail -n 30 >&2
		ulp_fail "fio $name failed (rc=$rc)"
	fi
	# terse v3: field 5 = total errors; 7/48 = read/write io KiB
	local line err rkb wkb
	line=$(grep -E '^3;' "$TMPD/$name.fio" | tail -n1)
	[[ -n $line ]] || ulp_fail "fio $name: no terse result line"
	err=$(cut -d';' -f5 <<<"$line") rkb=$(cut -d';' -f6 <<<"$line") wkb=$(cut -d';' -f47 <<<"$line")
	((err == 0)) || ulp_fail "fio $name: $err errors"
	((wkb > 0 && rkb > 0)) || ulp_fail "fio $name: nothing written ($wkb KiB) or verified ($rkb KiB)"
	info "fio $name: wrote $wkb KiB, verified $rkb KiB, 0 errors"
}

# ---- NFS -------------------------------------------------------------------
NFS_RDMA_PORT=20049
NFS_EXPORT=/srv/siw-ulp-export
# nfs_server_up: tmpfs export $NFS_EXPORT (fsid=0: also the NFSv4 root "/",
# the guest's overlay root cannot serve as the v4 pseudo root), rpcbind, mountd, nfsd
# with an RDMA listener on $NFS_RDMA_PORT (via /proc/fs/nfsd/portlist)
nfs_server_up() {
	need_cmd rpc.nfsd exportfs rpc.mountd rpcbind
	ulp_mod nfsd
	ulp_mod rpcrdma
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd fs"
	on_exit nfs_server_down
	mkdir -p "$NFS_EXPORT" /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery /run/rpcbind
	mountpoint -q "$NFS_EXPORT" || mount -t tmpfs -o size=512m ulpexp "$NFS_EXPORT"
	mountpoint -q /var/lib/nfs/rpc_pipefs || mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs 2>/dev/null || true
	pgrep -x rpcbind >/dev/null || rpcbind -w || fail "rpcbind failed"
	: >/etc/exports
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 "*:$NFS_EXPORT" ||
		fail "exportfs failed"
	pgrep -x rpc.mountd >/dev/null || rpc.mountd || fail "rpc.mountd failed"
	# short v4 grace/lease so a fresh server accepts OPENs quickly
	echo 10 >/proc/fs/nfsd/nfsv4leasetime 2>/dev/null || true
	echo 10 >/proc/fs/nfsd/nfsv4gracetime 2>/dev/null || true
	rpc.nfsd 4 || fail "rpc.nfsd failed"
	echo "rdma $NFS_RDMA_PORT" >/proc/fs/nfsd/portlist || ulp_fail "nfsd: adding rdma $NFS_RDMA_PORT to portlist failed"
	grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist ||
		ulp_fail "nfsd portlist lacks rdma: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
	if [[ $RDEV_LTYPE == siw ]]; then
		wait_for 10 tcp_listening "$NFS_RDMA_PORT" ||
			ulp_fail "nfsd: no TCP listener on $NFS_RDMA_PORT (iWARP listen)"
	fi
	info "nfsd: portlist $(tr '\n' ' ' </proc/fs/nfsd/portlist), versions $(cat /proc/fs/nfsd/versions)"
}
nfs_server_down() {
	rpc.nfsd 0 2>/dev/null
	exportfs -ua 2>/dev/null
	pkill -x rpc.mountd 2>/dev/null
	umount "$NFS_EXPORT" 2>/dev/null
	return 0
}
# nfs_mount SERVER VERS MNT: mount SERVER:$NFS_EXPORT over RDMA; checks the
# mount really uses the rdma transport
nfs_mount() {
	local srv=$1 vers=$2 mnt=$3 opts out rc=0
	ulp_mod rpcrdma
	mkdir -p "$mnt"
	opts=proto=rdma,port=$NFS_RDMA_PORT,vers=$vers,hard,timeo=600,retrans=2
	[[ $vers == 3 ]] && opts+=,nolock
	on_exit "umount -f $mnt"
	local path=$NFS_EXPORT
	[[ $vers == 4* ]] && path=/ # fsid=0 export is the v4 root
	out=$(timeout 120 mount -t nfs -o "$opts" "$srv:$path" "$mnt" 2>&1) || rc=$?
	((rc == 0)) || ulp_fail "mount -t nfs -o $opts $srv:$path failed (rc=$rc): $out"
	local m
	m=$(awk -v d="$mnt" '$2 == d' /proc/mounts)
	[[ $m == *proto=rdma* ]] || ulp_fail "$mnt is not an rdma mount: $m"
	[[ $m == *vers=$vers* ]] || ulp_fail "$mnt: wrong version: $m"
	awk -v d="$mnt" '$1 == "device" { on = ($5 == d) } on' /proc/self/mountstats |
		grep -qE '^[[:space:]]*xprt:[[:space:]]+rdma' ||
		ulp_fail "$mnt: mountstats shows no rdma xprt: $(grep -A30 "mounted on $mnt " /proc/self/mountstats | grep xprt)"
	info "mounted $srv:$path on $mnt ($opts)"
}
# nfs_v4_vers: the NFSv4 minor version the client kernel can mount: 4.2,
# or 4.0 when the kernel is built without CONFIG_NFS_V4_1/_V4_2 (the
# 6.12 debug kernel here); prints a note in that case
nfs_v4_vers() {
	local c=/boot/config-$(uname -r)
	if [[ -r $c ]] && ! grep -q '^CONFIG_NFS_V4_2=y' "$c"; then
		echo "# note: $(uname -r) has no CONFIG_NFS_V4_2 (NFS client), using vers=4.0" >&2
		echo 4.0
	else
		echo 4.2
	fi
}
# nfs_sizes: file sizes for the NFS data checks (bytes): 0 B .. $NFS_MAX
# (default 16 MiB, 2 MiB on the debug kernel; cases raise it for one pass)
nfs_sizes() {
	local max=${NFS_MAX:-$(scale 16777216 2097152)}
	echo 0 1 511 4096 65537 1048579 "$max"
}
# nfs_files_write DIR TAG: create the test files (sizes from nfs_sizes,
# content ulp_pattern seeded with TAG-SIZE) in DIR via cp; the reference
# copies stay in $TMPD/ref-TAG/
nfs_files_write() {
	local dir=$1 tag=$2 sz
	mkdir -p "$TMPD/ref-$tag"
	for sz in $(nfs_sizes); do
		ulp_pattern "$TMPD/ref-$tag/f$sz" "$sz" "$tag-$sz"
		sha256sum <"$TMPD/ref-$tag/f$sz" >"$TMPD/ref-$tag/f$sz.sha"
		cp "$TMPD/ref-$tag/f$sz" "$dir/f$sz" || ulp_fail "cp f$sz ($sz bytes) to $dir failed"
	done
	sync -f "$dir" 2>/dev/null || sync
}
# nfs_files_check DIR TAG [SUFFIX]: every file in DIR (name f<size><SUFFIX>)
# has its size and the sha256 of the reference
nfs_files_check() {
	local dir=$1 tag=$2 sfx=${3:-} sz a b
	for sz in $(nfs_sizes); do
		[[ -f $dir/f$sz$sfx ]] || ulp_fail "$dir/f$sz$sfx missing"
		[[ $(stat -c %s "$dir/f$sz$sfx") == "$sz" ]] || ulp_fail "$dir/f$sz$sfx: size $(stat -c %s "$dir/f$sz$sfx") != $sz"
		a=$(sha256sum <"$dir/f$sz$sfx") b=$(<"$TMPD/ref-$tag/f$sz.sha")
		[[ $a == "$b" ]] || ulp_fail "$dir/f$sz$sfx: sha256 differs from the reference ($sz bytes)"
	done
}
# nfs_files_check_direct DIR TAG: read the files back with O_DIRECT (the
# page cache cannot answer) and compare
nfs_files_check_direct() {
	local dir=$1 tag=$2 sz
	for sz in $(nfs_sizes); do
		((sz > 0)) || continue
		cmp <(dd if="$dir/f$sz" bs=1M iflag=direct status=none) "$TMPD/ref-$tag/f$sz" >/dev/null ||
			ulp_fail "O_DIRECT read of $dir/f$sz differs from the reference"
	done
}
# nfs_client_exercise MNT TAG [SERVER_DIR]: write, (server-side check), drop
# caches + read back (buffered and O_DIRECT), rename, delete, mkdir/rmdir
nfs_client_exercise() {
	local mnt=$1 tag=$2 sdir=${3:-} sz t0=$SECONDS tl=''
	local d=$mnt/$tag
	mkdir "$d" || ulp_fail "mkdir $d on NFS failed"
	nfs_files_write "$d" "$tag"
	tl+=" write:$((SECONDS - t0))s"
	[[ -z $sdir ]] || nfs_files_check "$sdir/$tag" "$tag"
	echo 3 >/proc/sys/vm/drop_caches
	t0=$SECONDS
	nfs_files_check "$d" "$tag"
	tl+=" read:$((SECONDS - t0))s"
	t0=$SECONDS
	nfs_files_check_direct "$d" "$tag"
	tl+=" read-direct:$((SECONDS - t0))s"
	t0=$SECONDS
	for sz in $(nfs_sizes); do
		mv "$d/f$sz" "$d/f$sz.renamed" || ulp_fail "rename f$sz on NFS failed"
	done
	[[ -z $sdir ]] || nfs_files_check "$sdir/$tag" "$tag" .renamed
	for sz in $(nfs_sizes); do
		[[ ! -e $d/f$sz && -e $d/f$sz.renamed ]] || ulp_fail "$d/f$sz: rename not visible"
		rm "$d/f$sz.renamed" || ulp_fail "rm f$sz.renamed on NFS failed"
	done
	rmdir "$d" || ulp_fail "rmdir $d failed (not empty? $(ls -la "$d"))"
	[[ ! -e $d ]] || ulp_fail "$d still exists after rmdir"
	[[ -z $sdir || ! -e $sdir/$tag ]] || ulp_fail "server still has $sdir/$tag after rmdir"
	tl+=" rename+rm:$((SECONDS - t0))s"
	info "$tag: $(nfs_sizes | wc -w) files, max $(nfs_sizes | tr ' ' '\n' | tail -n1) B:$tl"
}
# nfs_umount MNT: unmount (bounded), must be gone
nfs_umount() {
	local out rc=0
	out=$(timeout 60 umount "$1" 2>&1) || rc=$?
	((rc == 0)) || ulp_fail "umount $1 failed (rc=$rc): $out"
	! mountpoint -q "$1" || ulp_fail "$1 still mounted"
}

# ---- SMB Direct --------------------------------------------------------------
# smb_direct_required: skip unless this kernel's SMB client and server are
# built with SMB Direct (such a kernel links cifs.ko and ksmbd.ko against
# rdma_cm; Debian's are built without it)
smb_direct_required() {
	local mod
	for mod in cifs:CIFS_SMB_DIRECT ksmbd:SMB_SERVER_SMBDIRECT; do
		modinfo -F depends "${mod%:*}" 2>/dev/null | tr ',' '\n' | grep -qx rdma_cm ||
			skip "$(uname -r) is built without CONFIG_${mod#*:} (SMB Direct): its ${mod%:*} module does not use rdma_cm"
	done
}
# smb_server_up DIR: ksmbd shares DIR as [siw] for user root (password
# siwtest); waits for its SMB Direct listener (iWARP: TCP port 5445)
smb_server_up() {
	local conf=$TMPD/ksmbd.conf db=$TMPD/ksmbdpwd.db
	ulp_mod ksmbd
	mkdir -p "$1"
	printf '[global]\n\tserver signing = disabled\n[siw]\n\tpath = %s\n\tread only = no\n\tvalid users = root\n' \
		"$1" >"$conf"
	run ksmbd.adduser -c "$conf" -i "$db" -a root -p siwtest
	setsid ksmbd.mountd -n -c "$conf" -u "$db" >"$TMPD/mountd.log" 2>&1 &
	on_exit "ksmbd.control -s; kill $!"
	wait_for 30 tcp_listening 5445 ||
		ulp_fail "no SMB Direct listener on port 5445: $(ss -Hltn | tr '\n' ' '); mountd: $(tail -n 5 "$TMPD/mountd.log")"
	wait_for 10 tcp_listening 445 || ulp_fail "ksmbd does not listen on TCP 445"
}
# smb_mount SERVER MNT: mount //SERVER/siw over SMB Direct; it must be an
# RDMA session (the client's DebugData names SMBDirect)
smb_mount() {
	local out
	ulp_mod cifs
	out=$(mount -t cifs "//$1/siw" "$2" -o rdma,vers=3.1.1,username=root,password=siwtest 2>&1) ||
		ulp_fail "mount -o rdma //$1/siw failed: $out"
	on_exit "umount -f $2"
	grep -q "SMBDirect" /proc/fs/cifs/DebugData ||
		ulp_fail "mounted, but not over SMB Direct: $(head -c 2000 /proc/fs/cifs/DebugData)"
}
