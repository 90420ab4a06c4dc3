#!/usr/bin/env bash
# A QP destroyed while its own connect is still in progress (IDLE, MPA
# request sent, no reply yet) must not wait for the connection to time
# out: rdma_destroy_ep() destroys the QP before the id, so a program that
# gives up on a connect would block for mpa_timeout_ms (raised to 30 s
# here). The peer is a plain TCP listener in h2 that accepts and never
# answers. siw_cmtest destroys the QP 0.5 s after rdma_connect(); the
# call must return within 2 s (10 s on the debug kernel), and the connect
# must end as failed.
# timeout: 120
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ss python3
need_tool siw_cmtest
m=$(dmesg_mark)
rdev_netns
par=/sys/module/siw/parameters/mpa_timeout_ms
old=$(cat "$par")
echo 30000 >"$par"
on_exit "echo $old >$par"
port=19850
bg mute ip netns exec h2 python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
c, a = s.accept()
print("accepted", a, flush=True)
time.sleep(120)
' "$H2_IP" "$port"
wait_listen h2 "$port"
rc=0
timeout 100 ip netns exec h1 "$BIN/siw_cmtest" connect -D 500 -B "$(scale 2000 10000)" -e failed -t 40 \
	"$H2_IP:$port" >"$TMPD/cm.log" 2>&1 || rc=$?
cat "$TMPD/cm.log"
grep -q '^# destroy_qp took' "$TMPD/cm.log" || fail "siw_cmtest did not destroy the QP (rc=$rc)"
((rc == 0)) || fail "siw_cmtest connect -D failed (rc=$rc): $(grep -m2 '^FAIL' "$TMPD/cm.log" | tr '\n' ' ')"
grep -q '^accepted' "$TMPD/mute.log" || fail "the mute listener never saw the TCP connection"
dmesg_problems_since "$m"
echo "connect-abort passed: $(grep '^# destroy_qp took' "$TMPD/cm.log")"
