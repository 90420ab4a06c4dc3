#!/usr/bin/env bash
# `ss -K` destroys the client's TCP connection mid-transfer (tcp_abort, a
# reset to the peer): both ends must see the connection fail (error
# completions, not a hang), no delivered byte may be wrong, and a new
# connection works afterwards.
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
run ip netns exec h1 ss -K state established "dst $H2_IP and dport = :$port"
xfer_wait 90
xfer_failed
[[ -z $(conn) ]] || fail "the killed connection is still established: $(conn)"
dmesg_problems_since "$FAULT_MARK"
xfer_fresh $((port + 1))
echo "ss -K: both ends failed cleanly, data intact, new connection works"
