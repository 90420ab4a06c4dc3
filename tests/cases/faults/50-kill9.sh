#!/usr/bin/env bash
# kill -9 of the client mid-transfer: its QP is destroyed with the process,
# the connection is aborted, and the server must see an error within its
# bound instead of waiting forever; the device stays usable.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin
port=18950
xfer_start "$port"
run kill -KILL "$XFER_CLI"
xfer_wait 90
((XFER_SRC != 0)) || fail "server reported success after its peer was killed"
dmesg_problems_since "$FAULT_MARK"
xfer_fresh $((port + 1))
echo "kill -9: server failed cleanly, new connection works"
