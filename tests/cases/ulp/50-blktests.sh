#!/usr/bin/env bash
# blktests over siw: the upstream block layer suite's NVMe over Fabrics
# tests with nvme_trtype=rdma, as blktests runs them on a soft RDMA device
# (its start_soft_rdma: `modprobe siw`, which loads this tree's module
# from updates/, and an `rdma link add` on every Ethernet interface with
# carrier; here a veth pair, the target on vh1's address). The snapshot
# is $SIW_SHARED/blktests, built on the host by tests/run (CI has no
# network), run unmodified. Default: the fabrics tests listed below (setup,
# keep-alive, reset, delete right after setup, data verification with fio,
# reset and disconnect under I/O, queue types, queue count changes on
# reconnect, target teardown under I/O; nvme/060, target reset, needs a
# kernel with NVME_TARGET_DEBUGFS, which Debian's are not); --full
# (SIW_TEST_FULL=1): every test of the nvme group a fabrics transport can
# run. With BT_GROUP=srp (ulp/51-blktests-srp): the whole srp group (SCSI
# RDMA Protocol initiator and LIO target over siw, dm-multipath on top).
# BT_SEL="GROUP/NNN ...": only those (the default tier's short forms,
# ulp/52-blktests-nvme-short and ulp/53-blktests-srp-short).
# Every selected test must pass, or be one blktests skips for a reason
# that tests/cases/ulp/blktests-allowed-skips lists (srp/003 and 004: no
# legacy device mapper since Linux 5.0); the kernel log must stay clean.
# blktests keeps its images in its results directory; nvmet's file
# backend and the srp tests open them with O_DIRECT, which the guest's
# tmpfs refuses (EINVAL): the copy lives on an ext4 file system on a RAM
# disk (brd; where a kernel has none, on a loop device over a tmpfs file).
# timeout: 1500
# timeout-debug: 4000
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
BT_GROUP=${BT_GROUP:-nvme}
need_cmd fio rdma mkfs.ext4
[[ $BT_GROUP == nvme ]] && need_cmd nvme
[[ $BT_GROUP == srp ]] && need_cmd multipath multipathd sg_reset mkfs.xfs
[[ $RDEV_LTYPE == siw ]] || skip "blktests binds siw itself (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
bt=$SIW_TOP/build/blktests
[[ -x $bt/check && -x $bt/src/loblksize ]] ||
	fail "blktests not built at $bt (tests/run builds it from \$SIW_SHARED/blktests)"
m=$(dmesg_mark)
siw_fresh
veth_pair vh1 vh2
run ip addr add 10.90.0.1/24 dev vh1
# blktests binds siw to every interface with carrier; on exit no device
# of ours may stay behind
on_exit "rdma link del vh1_siw 2>/dev/null; rdma link del vh2_siw 2>/dev/null"
wait_for 10 test "$(<"/sys/class/net/vh1/carrier")" = 1 || fail "vh1 has no carrier"

# the RAM disk for blktests' copy and its images (see the top)
# (the debug kernel is built without brd: a loop device over a file in
# the guest's tmpfs instead, which loop opens buffered)
if modinfo brd >/dev/null 2>&1; then
	run modprobe brd rd_nr=1 rd_size=$((1536 * 1024))
	on_exit "modprobe -r brd"
	rdisk=/dev/ram0
else
	info "no brd module in $(uname -r): ext4 on a loop device over a tmpfs file"
	run modprobe loop
	truncate -s 1536M "$TMPD/bt.img" || fail "truncate $TMPD/bt.img"
	rdisk=$(losetup -f --show "$TMPD/bt.img") || fail "losetup of $TMPD/bt.img"
	on_exit "losetup -d $rdisk"
fi
mkfs.ext4 -q -F "$rdisk" || fail "mkfs.ext4 on $rdisk"
mkdir "$TMPD/mnt"
mount -t ext4 "$rdisk" "$TMPD/mnt" || fail "mount of $rdisk: $(dmesg | tail -n 3)"
on_exit "cd /; umount $TMPD/mnt || umount -l $TMPD/mnt"
cp -a "$bt" "$TMPD/mnt/bt" || fail "copy of blktests to the RAM disk"
cd "$TMPD/mnt/bt" || fail "cd $TMPD/mnt/bt"
if [[ $BT_GROUP == srp ]]; then
	# blktests' srp group requires siw.ko under /lib/modules/KVER/kernel/
	# (_have_module looks nowhere else); make install and DKMS put it in
	# updates/, which modprobe prefers. The README says so; here, as a
	# user would, link it there (the guest's /lib/modules is an overlay).
	kdir=/lib/modules/$(uname -r)/kernel/extra
	mkdir -p "$kdir"
	ln -sf "$(modinfo -n siw)" "$kdir/siw.ko" || fail "link siw.ko into $kdir"
	on_exit "rm -f $kdir/siw.ko"
	# srp/rc finds each multipath device by the link udev makes for it,
	# /dev/disk/by-id/dm-uuid-mpath-*, and the guest runs no udevd: start
	# one for this case, as on a host, without the rules that would act
	# on objects the case or blktests set up (rdma-core renaming the siw
	# devices blktests names, rdma-ndd, NVMe autoconnect, systemd's
	# network link policy giving the veth pair new MAC addresses)
	need_cmd udevadm
	udevd=/lib/systemd/systemd-udevd
	[[ -x $udevd ]] || fail "no $udevd (package systemd)"
	mkdir -p /etc/udev/rules.d
	for r in 60-rdma-persistent-naming 60-rdma-ndd 70-nvmf-autoconnect 80-net-setup-link; do
		ln -sf /dev/null "/etc/udev/rules.d/$r.rules"
	done
	"$udevd" --daemon || fail "$udevd --daemon failed"
	on_exit "udevadm control --exit"
	udevadm trigger --action=add --subsystem-match=block
	udevadm settle --timeout=60 || fail "udevadm settle: events still queued after 60 s"
	cat >config <<EOF
TIMEOUT=$(scale 10 20)
EOF
	sel=()
	for t in tests/srp/[0-9][0-9][0-9]; do sel+=("srp/${t##*/}"); done
else
	cat >config <<EOF
nvme_trtype=rdma
nvme_img_size=256M
TIMEOUT=$(scale 10 20)
EOF
fi
if [[ -n ${BT_SEL:-} ]]; then
	# a short form (ulp/52, ulp/53): the tests it names
	read -ra sel <<<"$BT_SEL"
elif [[ $BT_GROUP == srp ]]; then
	:
elif ((${SIW_TEST_FULL:-0})); then
	# every nvme test a fabrics transport like rdma can run (not the
	# PCIe, loop-only or TCP-only ones)
	sel=()
	for t in tests/nvme/[0-9][0-9][0-9]; do
		grep -qE '_require_nvme_trtype_is_fabrics|_require_nvme_trtype .*rdma' "$t" &&
			sel+=("nvme/${t##*/}")
	done
else
	sel=(nvme/003 nvme/004 nvme/006 nvme/008 nvme/010 nvme/014 nvme/022
		nvme/031 nvme/040 nvme/047 nvme/048 nvme/061)
fi
# nvme/048 changes the target's attr_qid_max and expects the host to come
# back with that many queues: nvmet forces the reconnect from 6.2 on;
# Debian's 6.1 only stores the value (nvmet_subsys_attr_qid_max_store in
# linux-source-6.1 6.1.192), so 048 fails there whatever the transport
kmaj=$(uname -r | cut -d. -f1) kmin=$(uname -r | cut -d. -f2)
if [[ " ${sel[*]} " == *" nvme/048 "* ]] && ((kmaj < 6 || (kmaj == 6 && kmin < 2))); then
	info "nvme/048 left out: $(uname -r)'s nvmet does not force a reconnect when attr_qid_max changes (6.2 does)"
	sel=("${sel[@]/nvme\/048/}")
	read -ra sel <<<"${sel[*]}"
fi
# blktests loads the modules its tests name and unloads them afterwards;
# nvme/047 sets up a loop device without asking for the loop module, which
# a host with static device nodes loads on the first open of
# /dev/loop-control. The guest has no such nodes: load it for the run.
run modprobe loop
info "blktests $(cut -d' ' -f4 SNAPSHOT 2>/dev/null) ./check ${sel[*]}"
rc=0
bound=$(scale 1400 3900)
[[ $BT_GROUP == srp ]] && bound=$(scale 2300 5900)
timeout "$bound" ./check "${sel[@]}" >"$TMPD/check.log" 2>&1 || rc=$?
# one verdict line per run: "nvme/006 (tr=rdma bd=device) (...) [passed]"
clean=$(sed 's/\x1b\[[0-9;]*m//g' "$TMPD/check.log")
sed 's/^/# /' <<<"$clean" | head -n 200
passed=$(grep -cE '\[passed\]' <<<"$clean" || true)
failed=$(grep -cE '\[failed\]' <<<"$clean" || true)
notrun=$(grep -cE '\[not run\]' <<<"$clean" || true)
info "blktests: $passed passed, $failed failed, $notrun not run (check rc=$rc)"
for f in results/nodev*/"$BT_GROUP"/*; do
	[[ -e $f && $f == *.full ]] || continue
	t=${f%.full}
	grep -qE "^status\s+fail" "$t" 2>/dev/null || continue
	echo "## ${t#results/} (failed): its output and log"
	sed 's/^/#   /' "$t.out.bad" 2>/dev/null | head -n 20
	tail -n 30 "$f" | sed 's/^/#   /'
done
((rc != 124)) || fail "blktests did not finish in its bound"
((failed == 0)) || fail "blktests: $failed of the selected tests failed: $(grep -E '\[failed\]' <<<"$clean" | awk '{ print $1 }' | tr '\n' ' ')"
# a test blktests itself did not run: allowed only with its reason listed
# in tests/cases/ulp/blktests-allowed-skips
allowed=$SIW_TOP/tests/cases/ulp/blktests-allowed-skips
skips=$(awk '/\[not run\]/ { t = $1; next } t && /^    / { r = $0; sub(/^ +/, "", r); print t, r; next } { t = "" }' <<<"$clean")
while read -r t r; do
	[[ -n $t ]] || continue
	grep -qxF "$t $r" "$allowed" || fail "blktests did not run $t ($r), a skip tests/cases/ulp/blktests-allowed-skips does not list"
	info "not run by blktests, as listed: $t ($r)"
done <<<"$skips"
((notrun == $(grep -c . <<<"$skips" || true))) || fail "blktests: $notrun tests not run, $(grep -c . <<<"$skips" || true) with a reason: $(grep -A1 -E '\[not run\]' <<<"$clean" | tr -s ' \n' ' ' | head -c 600)"
# nvme tests run once per target backend (bd=device, bd=file) where they
# use one: every selected test must have passed at least once
for t in "${sel[@]}"; do
	grep -qxF "$t" <(awk '{ print $1 }' <<<"$skips") && continue
	grep -qE "^$t .*\[passed\]" <<<"$clean" || fail "blktests: $t has no passed run"
done
((rc == 0)) || fail "blktests' check exited $rc"
cd "$SIW_TOP" || fail "cd $SIW_TOP"
dmesg_problems_since "$m"
echo "blktests passed: ${#sel[@]} tests of the $BT_GROUP group over siw ($passed runs)"
