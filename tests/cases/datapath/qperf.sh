#!/usr/bin/env bash
# qperf over rdma_cm (-cm1) between two network namespaces, the way its
# users run it (issue 22): rc_bw, rc_bi_bw, rc_lat, rc_rdma_read_bw,
# rc_rdma_read_lat and rc_rdma_write_poll_lat must each finish and report
# a figure. rc_rdma_read_bw ends with its client's rdma_disconnect while
# about a thousand Reads are still queued (ORD 1): the orderly close must
# wait for the last of them and then happen (it used to hang: nothing
# woke the transmitter of a closing QP when its last Read completed).
# Not possible on iWARP, and checked to fail cleanly: rc_rdma_write_bw and
# rc_rdma_write_lat (RDMA Write with immediate data), rc_compare_swap_mr
# and rc_fetch_add_mr (atomics): "failed to post ...".
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma qperf ss
m=$(dmesg_mark)
rdev_netns
port=19765
ip netns exec h2 qperf -lp "$port" >"$TMPD/srv.log" 2>&1 &
spid=$!
on_exit "kill $spid 2>/dev/null"
wait_listen h2 "$port"

secs=$(scale 2 3)
bound=$(scale 60 180)
for t in rc_bw rc_bi_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_poll_lat; do
	rc=0
	t0=$SECONDS
	timeout "$bound" ip netns exec h1 qperf -lp "$port" -cm1 -t "$secs" "$H2_IP" "$t" \
		>"$TMPD/$t.log" 2>&1 || rc=$?
	sed "s/^/[$t] /" "$TMPD/$t.log"
	((rc == 0)) || fail "qperf $t: exit $rc after $((SECONDS - t0)) s (124: did not finish in ${bound} s)"
	grep -qE '^ *(bw|latency|msg_rate) += +[0-9.]+ ' "$TMPD/$t.log" ||
		fail "qperf $t: no figure in its output"
	info "$t: $((SECONDS - t0)) s"
done

# immediate data and atomics: refused at posting, not hung
for t in rc_rdma_write_bw rc_rdma_write_lat rc_compare_swap_mr rc_fetch_add_mr; do
	rc=0
	timeout "$bound" ip netns exec h1 qperf -lp "$port" -cm1 -t 1 "$H2_IP" "$t" \
		>"$TMPD/$t.log" 2>&1 || rc=$?
	sed "s/^/[$t] /" "$TMPD/$t.log"
	((rc != 124)) || fail "qperf $t hung instead of failing"
	grep -qE 'failed to post (rdma write with immediate|compare and swap|fetch and add)' "$TMPD/$t.log" ||
		fail "qperf $t: not refused at posting (rc=$rc)"
	info "$t: not possible on iWARP, refused at posting"
done

kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
left() { rdma res show qp 2>&1 | grep -c " comm qperf" || true; }
wait_for 30 test "$(left)" -eq 0 || fail "qperf QPs left: $(rdma res show qp)"
dmesg_problems_since "$m"
echo "qperf passed"
