#!/usr/bin/env bash
# QP access flags are enforced (issue 21, defect 11): a peer's RDMA Write
# to a QP whose access flags lack IBV_ACCESS_REMOTE_WRITE, or its RDMA
# Read from a QP without IBV_ACCESS_REMOTE_READ, is a protection error
# even though the target MR allows it: the target QP gets
# IBV_EVENT_QP_ACCESS_ERR and goes to ERROR and sends a Terminate, the
# initiator's QP goes to ERROR, a refused Read completes with
# IBV_WC_REM_ACCESS_ERR, no data moves. With the flag set, the same Write
# or Read succeeds (data verified). The flags are narrowed in RTS with
# ibv_modify_qp(IBV_QP_ACCESS_FLAGS) alone, on the passive and on the
# active QP of a connection, to {READ}, {WRITE} and {}, and widened again.
# Flags set before the connection do not survive it (siw(7), ACCESS:
# librdmacm sets them, 0 on the active side), so a QP set to {READ} in
# INIT must enter RTS with {WRITE|READ}; narrowing it then works as well.
# siw_qpaccess runs the scenarios on connected pairs in one process over
# a local veth address (rdev_veth_local); the Terminates show in the
# device's term_tx/term_rx counters.
# timeout: 240
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_qpaccess
[[ $SIW_DEV_TYPE == siw ]] || skip "QP access flag enforcement is checked for this project's siw"
m=$(dmesg_mark)
rdev_veth_local
tx0=$(rdma_stat "$RDEV" term_tx) rx0=$(rdma_stat "$RDEV" term_rx)
[[ -n $tx0 && -n $rx0 ]] || fail "no term_tx/term_rx counters on $RDEV: $(rdma stat show link "$RDEV/1")"
rc=0
timeout 600 "$BIN/siw_qpaccess" -a "$RDEV_IP" -p 18800 -t "$(scale 10 30)" >"$TMPD/qa.log" 2>&1 || rc=$?
cat "$TMPD/qa.log"
((rc == 0)) || fail "siw_qpaccess failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/qa.log" || tail -n 1 "$TMPD/qa.log")"
# six scenarios end in a refusal (init-set, rts-r, rts-w, rts-none,
# active-r, active-w), each with one Terminate sent by the target and
# received by the initiator, both on this one device
want=6
got=$(sed -n 's/^# refused \([0-9]*\)$/\1/p' "$TMPD/qa.log")
[[ $got == "$want" ]] || fail "siw_qpaccess saw $got refusals as protection errors, want $want"
tx1=$(rdma_stat "$RDEV" term_tx) rx1=$(rdma_stat "$RDEV" term_rx)
info "term_tx $tx0 -> $tx1, term_rx $rx0 -> $rx1"
((tx1 - tx0 >= want)) || fail "term_tx grew by $((tx1 - tx0)), want >= $want (one Terminate per refusal)"
((rx1 - rx0 >= want)) || fail "term_rx grew by $((rx1 - rx0)), want >= $want"
left=$(res_left "comm siw_qpaccess" qp)
[[ -z $left ]] || fail "QPs left after siw_qpaccess: $left"
dmesg_since "$m" | grep -E "$RDEV" | tail -n 12 || true
dmesg_problems_since "$m"
echo "QP access flags enforced both ways"
