#!/usr/bin/env bash
# Object churn (siw_churn): 1000 (debug: 100) create/destroy cycles of the
# whole verbs object graph, plus 20 children SIGKILLed with live objects.
# Afterwards `rdma res show` must list no QP/CQ/MR/PD of the device, and on
# a kernel with kmemleak (the debug kernel) kmemleak must find nothing.
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
# Resources are released asynchronously after a process dies: poll.
# left: the qp/cq/mr/pd of $RDEV that rdma res show lists (kernel-owned
# ones, comm [ib_core] e.g. rxe's GSI QP, are not ours); returns 2 (the
# error in $TMPD/res.err) when rdma res show itself fails: a failing
# command must not read as "nothing left"
left() {
	local t out
	rm -f "$TMPD/res.err"
	for t in qp cq mr pd; do
		if ! out=$(rdma res show "$t" 2>&1); then
			echo "rdma res show $t failed: $out" >"$TMPD/res.err"
			return 2
		fi
		grep -E "(^| )(dev|link) $RDEV(/[0-9]+)? " <<<"$out" | grep -v 'comm \[' || true
	done
}
none_left() { local l; l=$(left) && [[ -z $l ]]; }
if ! wait_for 30 none_left; then
	[[ -e $TMPD/res.err ]] && fail "$(<"$TMPD/res.err")"
	fail "rdma res show still lists objects of $RDEV: $(left | head -n 10 | tr '\n' ' ')"
fi
info "rdma res show: no qp/cq/mr/pd left on $RDEV"
out=$(rdma res show 2>&1) || fail "rdma res show failed: $out"
grep -E "^[0-9]+: $RDEV:" <<<"$out" || true
dmesg_problems_since "$m"
kmemleak_scan_check || fail "kmemleak after churn: $KMEMLEAK_WHY"
echo "churn passed"
