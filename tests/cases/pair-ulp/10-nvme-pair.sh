#!/usr/bin/env bash
# NVMe over Fabrics on siw between two guests over the qemu link: role b
# is the nvmet-rdma target (10.77.0.2, memory-backed null_blk namespace),
# role a the nvme-rdma host. Discover, connect with 2 I/O queues, pattern
# writes 512 B..1 MiB O_DIRECT + read back (b checks its null_blk against
# the same deterministic pattern), concurrent readers/writers, fio crc32c
# verify, a port outage during fio (b unlinks and relinks the port; the
# host reconnects, fio must finish without error), disconnect, reconnect
# and re-verify.
# timeout: 360
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd nvme fio rdma ss cmp openssl
m=$(dmesg_mark)
NQN=$ULP_NQN_BASE:pair
S=$(scale 8 2) # MiB
# read-back block sizes: 4 KiB reads cost ~40 ms each over the qemu link
# (see the report on small-message latency); 4 KiB is covered by fio here
# and by the one-guest cases
ULP_VERIFY_BS="1048576 131072"
ulp_siw_pair
# barriers whose name carries a verdict (target-check-ok/-BAD) fail the
# other side at once instead of after a barrier timeout
T=$(scale 300 1200)
if [[ $SIW_ROLE == b ]]; then
	step "target on $ULP_IP"
	nullb_create ulpnbp "$S"
	nb=$NULLB_DEV
	nvmet_up "$NQN" "$ULP_IP" "$nb"
	ulp_barrier target-up "$T"
	ulp_barrier pattern-written "$T"
	ulp_pattern "$TMPD/p" $((S << 20)) pair-ns1
	if cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$TMPD/p" >/dev/null; then
		ulp_barrier target-check-ok "$T"
	else
		ulp_barrier target-check-BAD "$T"
		ulp_fail "target null_blk differs from the pattern the host wrote"
	fi
	step "port outage"
	ulp_barrier fio-running "$T"
	nvmet_unlink "$NQN"
	info "port unlinked"
	sleep 4
	nvmet_link "$NQN" || ulp_fail "relink failed"
	info "port relinked"
	ulp_barrier port-back "$T"
	ulp_barrier host-done "$T"
	nvmet_down
else
	ulp_mod nvme_rdma
	ulp_barrier target-up "$T"
	step "discover $SIW_PEER_IP"
	out=$(timeout 60 nvme discover -t rdma -a "$SIW_PEER_IP" -s "$ULP_PORT" 2>&1) || ulp_fail "nvme discover failed: $out"
	grep -q "subnqn: *$NQN" <<<"$out" || ulp_fail "discovery log lacks $NQN: $out"
	step "connect -i 2"
	nvme_host_connect "$NQN" "$SIW_PEER_IP"
	nq=$(nvme_ctrl_ioqueues "$NVME_CTRL")
	((nq == 2)) || ulp_fail "$NVME_CTRL has $nq I/O queues, wanted 2"
	d=$(nvme_wait_ns "$NQN" 1)
	[[ $(blockdev --getsize64 "$d") == $((S << 20)) ]] || fail "$d size $(blockdev --getsize64 "$d") != $S MiB"
	ulp_pattern "$TMPD/p" $((S << 20)) pair-ns1
	step "pattern write + read back"
	blk_write_regions "$d" "$TMPD/p" $((S << 20))
	blk_verify_all "$d" "$TMPD/p" $((S << 20))
	ulp_barrier pattern-written "$T"
	ulp_barrier target-check-ok "$T"
	step "concurrent writers+readers"
	blk_concurrent "$d" "$TMPD/p" $((S << 20))
	step "fio crc32c verify"
	rc=0; ulp_fio fio-pair "$d" $((S << 20)) || rc=$?
	ulp_fio_check fio-pair "$rc"
	step "fio verify across a port outage"
	m2=$(dmesg_mark)
	ulp_fio fio-flap "$d" $((S << 20)) --rate="$(scale 512k 128k)" &
	fpid=$!
	on_exit "kill $fpid"
	sleep 2
	ulp_barrier fio-running "$T"
	ulp_barrier port-back "$T"
	wait_for 60 nvme_state_is "$NVME_CTRL" live ||
		ulp_fail "$NVME_CTRL did not come back within 60 s (state $(cat "/sys/class/nvme/$NVME_CTRL/state"))"
	rc=0
	wait_pid "$fpid" "$(scale 120 600)" || rc=$?
	ulp_fio_check fio-flap "$rc"
	dmesg_since "$m2" | grep -qE "$NVME_CTRL: Successfully reconnected" ||
		ulp_fail "no 'Successfully reconnected' from $NVME_CTRL (did the outage happen?): $(dmesg_since "$m2" | grep nvme | tail -n 10)"
	dd if="$d" of="$TMPD/img" bs=1M iflag=direct status=none
	step "disconnect, reconnect, re-verify"
	out=$(timeout 60 nvme disconnect -n "$NQN" 2>&1) || ulp_fail "nvme disconnect failed: $out"
	wait_for 30 nvme_no_ctrl "$NQN" || ulp_fail "controller still present after disconnect"
	nvme_host_connect "$NQN" "$SIW_PEER_IP"
	d=$(nvme_wait_ns "$NQN" 1)
	blk_verify "$d" "$TMPD/img" $((S << 20)) 65536
	nvme_host_disconnect "$NQN" || ulp_fail "final disconnect failed"
	ulp_barrier host-done "$T"
fi
wait_for 20 ulp_no_qps || ulp_fail "QPs left on $RDEV after teardown: $(rdma res show qp)"
dmesg_problems_since "$m"
step "pair nvme passed ($SIW_ROLE)"
