#!/usr/bin/env bash
# blktests over siw: the upstream block layer suite's NVMe over Fabrics
# tests with nvme_trtype=rdma, as blktests runs them on a soft RDMA device
# (its start_soft_rdma: `modprobe siw`, which loads this tree's module
# from updates/, and an `rdma link add` on every Ethernet interface with
# carrier; here a veth pair, the target on vh1's address). The snapshot
# is $SIW_SHARED/blktests, built on the host by tests/run (CI has no
# network). Default: the fabrics tests listed below (setup, keep-alive,
# reset, delete right after setup, data verification with fio, reset and
# disconnect under I/O, queue types, queue count changes on reconnect,
# target teardown under I/O; nvme/060, target reset, needs a kernel with
# NVME_TARGET_DEBUGFS, which Debian's are not); --full (SIW_TEST_FULL=1): every
# test of the nvme group a fabrics transport can run. Every selected test must pass; none may be skipped
# ("not run"); the kernel log must stay clean.
# timeout: 1500
# timeout-debug: 4000
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd nvme fio rdma
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

# blktests keeps its images under its results directory, on the guest's
# tmpfs; nvmet's file backend opens them with O_DIRECT, which tmpfs
# refuses (EINVAL): only the block device backend (a loop device over the
# image) runs here. An ext4 file system on a loop device for them failed
# to mount in the guest (EPERM, 2026-12-02, not understood yet).
cp -a "$bt" "$TMPD/bt" || fail "copy of blktests to $TMPD"
cd "$TMPD/bt" || fail "cd $TMPD/bt"
# TIMEOUT: the length of the fio runs of the TIMED tests (010, 040, 061);
# 256 MiB images (nvme_img_size, default 1G): they are in RAM
cat >config <<EOF
nvme_trtype=rdma
NVMET_BLKDEV_TYPES=device
nvme_img_size=256M
TIMEOUT=$(scale 10 20)
EOF
if ((${SIW_TEST_FULL:-0})); then
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
info "blktests $(cut -d' ' -f4 SNAPSHOT 2>/dev/null) ./check ${sel[*]} (nvme_trtype=rdma)"
rc=0
timeout "$(scale 1400 3900)" ./check "${sel[@]}" >"$TMPD/check.log" 2>&1 || rc=$?
# one verdict line per test: "nvme/006 (tr=rdma) (...) [passed]"
clean=$(sed 's/\x1b\[[0-9;]*m//g' "$TMPD/check.log")
sed 's/^/# /' <<<"$clean" | head -n 200
passed=$(grep -cE '\[passed\]' <<<"$clean" || true)
failed=$(grep -cE '\[failed\]' <<<"$clean" || true)
notrun=$(grep -cE '\[not run\]' <<<"$clean" || true)
info "blktests: $passed passed, $failed failed, $notrun not run (check rc=$rc)"
for f in results/nodev*/nvme/*; do
	[[ -e $f && $f == *.full ]] || continue
	t=${f%.full}
	grep -qE "^status\s+fail" "$t" 2>/dev/null || continue
	echo "## ${t#results/} (failed): its output and log"
	sed 's/^/#   /' "$t.out.bad" 2>/dev/null | head -n 20
	tail -n 30 "$f" | sed 's/^/#   /'
done
((rc != 124)) || fail "blktests did not finish in its bound"
((failed == 0)) || fail "blktests: $failed of the selected tests failed: $(grep -E '\[failed\]' <<<"$clean" | awk '{ print $1 }' | tr '\n' ' ')"
((notrun == 0)) || fail "blktests: $notrun selected tests did not run: $(grep -A1 -E '\[not run\]' <<<"$clean" | tr -s ' \n' ' ' | head -c 600)"
((passed == ${#sel[@]})) || fail "blktests: $passed passed, expected ${#sel[@]}"
((rc == 0)) || fail "blktests' check exited $rc"
cd "$SIW_TOP" || fail "cd $SIW_TOP"
dmesg_problems_since "$m"
echo "blktests passed: $passed tests of the nvme group over siw (nvme_trtype=rdma)"
