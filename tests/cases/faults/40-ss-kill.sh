#!/usr/bin/env bash
# `ss -K` destroys the client's TCP connection mid-transfer (tcp_abort, a
# reset to the peer): both ends must see the connection fail (error
# completions, not a hang), each counts it (conn_lost) and says so in the
# kernel log, no delivered byte may be wrong, and a new connection works
# afterwards.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin ss
port=18940
xfer_start "$port"
conn() { ip netns exec h1 ss -Htn state established "dst $H2_IP and dport = :$port"; }
[[ -n $(conn) ]] || fail "no TCP connection to port $port in h1"
lost1=$(rdma_stat "$RDEV1" conn_lost) lost2=$(rdma_stat "$RDEV2" conn_lost)
run ip netns exec h1 ss -K state established "dst $H2_IP and dport = :$port"
xfer_wait 90
xfer_failed
for d in "$RDEV1 $lost1" "$RDEV2 $lost2"; do
	read -r dev n0 <<<"$d"
	n=$(($(rdma_stat "$dev" conn_lost) - n0))
	((n == 1)) || fail "conn_lost of $dev moved by $n, expected 1"
done
# the line follows the count at once; wait for it, not for luck
lost_line() { dmesg_since "$FAULT_MARK" | grep -E "$1: connection to $2 lost: -[0-9]+"; }
for d in "$RDEV1 $H2_IP:$port" "$RDEV2 $H1_IP:[0-9]+"; do
	read -r dev peer <<<"$d"
	wait_for 10 lost_line "$dev" "$peer" ||
		fail "no kernel log line on $dev's lost connection"
	lost_line "$dev" "$peer"
done
[[ -z $(conn) ]] || fail "the killed connection is still established: $(conn)"
dmesg_problems_since "$FAULT_MARK"
xfer_fresh $((port + 1))
echo "ss -K: both ends failed cleanly, data intact, new connection works"
