#!/usr/bin/env bash
# CQ overflow from user space and user CQ-ring misuse (issue 21 defect 7,
# issue 23), tests/bin/siw_ringattack:
# -m overflow: a receive CQ of 4 entries, 7 receives posted, 7 messages
#   arrive and nobody polls. The completion that does not fit must not be
#   dropped silently: IBV_EVENT_CQ_ERR on the CQ, IBV_EVENT_QP_FATAL on the
#   QP that lost it, that QP in ERR; the 4 entries written stay intact and
#   in order. Here: the device counter cq_overflow grows and the kernel
#   log has a line naming the device, the CQ and "overflow".
# -m cqgarbage: every CQE set VALID with garbage and a random control word
#   before anything completes (looks like a full CQ): overflow handling as
#   above, the consumer-owned entries untouched; then garbage, VALID
#   toggling and random control words on both CQs while messages flow,
#   ERROR and destroy while writing: every system call within 1 s.
# Both end with a fresh pair moving data correctly; the kernel log must
# stay clean. Needs libsiw rings: siw only (SIW_DEV_TYPE=siw or siw-ref).
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_ringattack
[[ $RDEV_LTYPE == siw ]] || skip "siw_ringattack needs libsiw rings (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_veth_local
bad=()
ovf() { # -> the cq_overflow counter of $RDEV
	local v
	v=$(rdma_stat "$RDEV" cq_overflow)
	[[ $v =~ ^[0-9]+$ ]] || fail "no cq_overflow counter: $(rdma stat show link "$RDEV/1" 2>&1 | head -n 3)"
	echo "$v"
}
tmo=$(scale 10 30)
for mode in overflow cqgarbage; do
	c0=$(ovf)
	m1=$(dmesg_mark)
	rc=0
	timeout 400 "$BIN/siw_ringattack" -a "$RDEV_IP" -p 18950 -m "$mode" -T "$tmo" \
		-P "$(scale 1 3)" >"$TMPD/$mode.log" 2>&1 || rc=$?
	sed "s/^/[$mode] /" "$TMPD/$mode.log"
	c1=$(ovf)
	info "$mode: cq_overflow $c0 -> $c1"
	grep -qE '^ringattack: [0-9]+ rounds' "$TMPD/$mode.log" ||
		bad+=("$mode: no summary line (rc=$rc)")
	((rc == 0)) || bad+=("$mode: rc=$rc: $(grep '^FAIL' "$TMPD/$mode.log" | head -n 4 | tr '\n' ' ')")
	((c1 > c0)) || bad+=("$mode: cq_overflow did not grow ($c0 -> $c1)")
	line=$(dmesg_since "$m1" | grep -F "$RDEV" | grep -E 'CQ' | grep -iE 'overflow' | head -n 1 || true)
	if [[ -n $line ]]; then
		info "$mode: kernel log: $line"
	else
		bad+=("$mode: no kernel log line naming $RDEV, the CQ and overflow")
	fi
done
dmesg_since "$m" | grep -vE 'siwtest: ' | tail -n 30
if ((${#bad[@]})); then
	(dmesg_problems_since "$m") || true
	fail "$(printf '%s; ' "${bad[@]}")"
fi
dmesg_problems_since "$m"
echo "cq-overflow passed"
