#!/usr/bin/env bash
# NVMe-oF over siw, one guest, target nvmet_rdma with use_srq=1 (shared
# receive queue): the SRQ must exist on the siw device (rdma res), then
# pattern writes 512 B..1 MiB + read back and fio crc32c verify.
# timeout: 240
# timeout-debug: 720
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd nvme fio rdma ss cmp
modinfo -F parm nvmet_rdma | grep -q '^use_srq:' || skip "nvmet_rdma of $(uname -r) has no use_srq parameter"
m=$(dmesg_mark)
NQN=$ULP_NQN_BASE:srq
S=$(scale 16 2) # MiB
step "${RDEV_PFX}0 on ulp0, target with use_srq=1"
ulp_siw_local
nullb_create ulpnb2 "$S"
nb=$NULLB_DEV
modprobe -r nvmet_rdma 2>/dev/null || true
NVMET_RDMA_PARAMS="use_srq=1" nvmet_up "$NQN" "$ULP_IP" "$nb"
[[ $(</sys/module/nvmet_rdma/parameters/use_srq) == Y ]] || fail "nvmet_rdma use_srq is not Y"
ulp_mod nvme_rdma
nvme_host_connect "$NQN" "$ULP_IP"
d=$(nvme_wait_ns "$NQN" 1)
# the target allocates its SRQs when the first queue arrives on the device
srqs=$(rdma res show srq 2>/dev/null | grep -c "dev $RDEV" || true)
((srqs >= 1)) || ulp_fail "no SRQ on $RDEV with use_srq=1: $(rdma res show srq 2>&1 | head -n 5)"
info "$srqs SRQ(s) on $RDEV: $(rdma res show srq 2>/dev/null | head -n 2 | tr '\n' ' ')"
if dmesg_since "$m" | grep -qiE 'srq.*(fail|not supported)'; then
	ulp_fail "nvmet_rdma reported an SRQ problem: $(dmesg_since "$m" | grep -iE srq)"
fi

step "pattern write + read back"
ulp_pattern "$TMPD/p" $((S << 20)) srq
blk_write_regions "$d" "$TMPD/p" $((S << 20))
blk_verify_all "$d" "$TMPD/p" $((S << 20))
cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$TMPD/p" >/dev/null || ulp_fail "target null_blk differs from the pattern"
step "fio crc32c verify"
rc=0; ulp_fio fio-srq "$d" $((S << 20)) || rc=$?
ulp_fio_check fio-srq "$rc"
nvme_host_disconnect "$NQN" || ulp_fail "disconnect failed"
nvmet_down
[[ ! -d /sys/module/nvmet_rdma ]] || ulp_fail "nvmet_rdma still loaded (use_srq=1 would leak into later cases)"
wait_for 20 ulp_no_qps || ulp_fail "QPs left on $RDEV after teardown: $(rdma res show qp)"
dmesg_problems_since "$m"
step "nvme with target SRQ passed"
