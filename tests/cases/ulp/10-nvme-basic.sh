#!/usr/bin/env bash
# NVMe over Fabrics on siw inside one guest: nvmet-rdma target (null_blk
# memory-backed namespace + file namespace) and nvme-rdma host connecting to
# the siw device's own address (siw0 on veth ulp0, 10.89.1.1). Discover,
# connect with 2 I/O queues, pattern writes 512 B..1 MiB O_DIRECT + read
# back, concurrent readers/writers, fio crc32c verify, disconnect,
# reconnect and re-verify, disconnect.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd nvme fio rdma ss taskset cmp
m=$(dmesg_mark)
NQN=$ULP_NQN_BASE:basic
S1=$(scale 16 4) S2=$(scale 8 2) # MiB: null_blk, file
step "${RDEV_PFX}0 on ulp0"
ulp_siw_local
nullb_create ulpnb0 "$S1"
nb=$NULLB_DEV
img=$TMPD/ns2.img
truncate -s "${S2}M" "$img"
step "nvmet target: ns1 $nb (${S1} MiB), ns2 file (${S2} MiB, buffered)"
nvmet_up "$NQN" "$ULP_IP" "$nb" "$img:buffered"

step "discover"
ulp_mod nvme_rdma
out=$(timeout 60 nvme discover -t rdma -a "$ULP_IP" -s "$ULP_PORT" 2>&1) || ulp_fail "nvme discover failed: $out"
grep -q "subnqn: *$NQN" <<<"$out" || ulp_fail "discovery log lacks $NQN: $out"
grep -q 'trtype: *rdma' <<<"$out" || ulp_fail "discovery log lacks trtype rdma: $out"

step "connect -i 2"
nvme_host_connect "$NQN" "$ULP_IP"
nq=$(nvme_ctrl_ioqueues "$NVME_CTRL")
((nq == 2)) || ulp_fail "$NVME_CTRL has $nq I/O queues, wanted 2"
d1=$(nvme_wait_ns "$NQN" 1) d2=$(nvme_wait_ns "$NQN" 2)
[[ $(blockdev --getsize64 "$d1") == $((S1 << 20)) ]] || fail "$d1 size $(blockdev --getsize64 "$d1") != $S1 MiB"
[[ $(blockdev --getsize64 "$d2") == $((S2 << 20)) ]] || fail "$d2 size $(blockdev --getsize64 "$d2") != $S2 MiB"
qps=$(ulp_rdma_qps)
((qps >= 6)) || ulp_fail "expected >= 6 kernel QPs on $RDEV (3 host + 3 target), rdma res shows $qps"
info "ns1=$d1 ns2=$d2, $qps QPs on $RDEV"

p1=$TMPD/p1 p2=$TMPD/p2
ulp_pattern "$p1" $((S1 << 20)) ns1
ulp_pattern "$p2" $((S2 << 20)) ns2
step "pattern write ns1 (bs $ULP_BS_LIST), read back"
blk_write_regions "$d1" "$p1" $((S1 << 20))
blk_verify_all "$d1" "$p1" $((S1 << 20))
cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$p1" >/dev/null || ulp_fail "target-side null_blk $nb content differs from the pattern"
step "pattern write ns2 (file), read back"
blk_write_regions "$d2" "$p2" $((S2 << 20))
blk_verify_all "$d2" "$p2" $((S2 << 20))
cmp "$img" "$p2" >/dev/null || ulp_fail "target-side file content differs from the pattern"

step "concurrent writers+readers on ns1"
blk_concurrent "$d1" "$p1" $((S1 << 20))

step "fio crc32c verify on ns2 then ns1"
rc=0; ulp_fio fio-ns2 "$d2" $((S2 << 20)) || rc=$?
ulp_fio_check fio-ns2 "$rc"
rc=0; ulp_fio fio-ns1 "$d1" $((S1 << 20)) || rc=$?
ulp_fio_check fio-ns1 "$rc"
# fio overwrote the namespaces: take the new content as reference
dd if="$d1" of="$p1" bs=1M iflag=direct status=none
dd if="$d2" of="$p2" bs=1M iflag=direct status=none
cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$p1" >/dev/null || ulp_fail "ns1 via host differs from the target's null_blk after fio"
cmp "$img" "$p2" >/dev/null || ulp_fail "ns2 via host differs from the target's file after fio"

step "disconnect"
out=$(timeout 60 nvme disconnect -n "$NQN" 2>&1) || ulp_fail "nvme disconnect failed: $out"
wait_for 30 nvme_no_ctrl "$NQN" || ulp_fail "controller still present after disconnect"
wait_for 10 test ! -b "$d1" || ulp_fail "$d1 still present after disconnect"

step "reconnect, re-verify"
nvme_host_connect "$NQN" "$ULP_IP"
d1=$(nvme_wait_ns "$NQN" 1) d2=$(nvme_wait_ns "$NQN" 2)
blk_verify "$d1" "$p1" $((S1 << 20)) 65536
blk_verify "$d2" "$p2" $((S2 << 20)) 65536
out=$(timeout 60 nvme disconnect -n "$NQN" 2>&1) || ulp_fail "nvme disconnect failed: $out"
wait_for 30 nvme_no_ctrl "$NQN" || ulp_fail "controller still present after disconnect"
nvmet_down
wait_for 20 ulp_no_qps || ulp_fail "QPs left on $RDEV after teardown: $(rdma res show qp)"
dmesg_problems_since "$m"
step "nvme basic passed"
