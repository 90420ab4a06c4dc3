#!/usr/bin/env bash
# Object churn (siw_churn): 1000 (debug: 100) create/destroy cycles of the
# whole verbs object graph, plus 20 children SIGKILLed with live objects.
# Afterwards `rdma res show` must list no QP/CQ/MR/PD of the device, and on
# the debug kernel kmemleak must find nothing.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_churn
m=$(dmesg_mark)
rdev_lo
rc=0
timeout 1700 "$BIN/siw_churn" -d "$RDEV" -n "$(scale 1000 100)" -k 20 >"$TMPD/churn.log" 2>&1 || rc=$?
cat "$TMPD/churn.log"
((rc == 0)) || fail "siw_churn failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/churn.log")"
# Resources are released asynchronously after a process dies: give it time.
left() {
	local t
	for t in qp cq mr pd; do
		# kernel-owned objects (comm [ib_core], e.g. rxe's GSI QP) are not ours
		rdma res show "$t" 2>/dev/null | grep -E "(^| )(dev|link) $RDEV(/[0-9]+)? " | grep -v 'comm \[' || true
	done
}
if ! wait_for 30 test -z "$(left)"; then
	left
	fail "rdma res show still lists objects of $RDEV"
fi
info "rdma res show: no qp/cq/mr/pd left on $RDEV"
rdma res show | grep -E "^[0-9]+: $RDEV:" || true
dmesg_problems_since "$m"
if is_debug_kernel; then
	kmemleak_scan_check || fail "kmemleak reported leaks after churn"
fi
echo "churn passed"
