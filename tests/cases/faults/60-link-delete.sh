#!/usr/bin/env bash
# `rdma link delete` of the client's device under load: rdma_cm tells the
# client (DEVICE_REMOVAL), its connection is torn down and its work
# requests flushed; the deletion must finish, both ends must end with an
# error, and a re-created device works.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin
port=18960
xfer_start "$port"
timeout 120 rdma link delete "$RDEV1" >"$TMPD/del.log" 2>&1 &
del=$!
xfer_wait 90
wait_pid "$del" 120 || fail "rdma link delete $RDEV1 under load failed or hung ($(cat "$TMPD/del.log"))"
xfer_failed
rdma_link_exists "$RDEV1" && fail "$RDEV1 still exists"
dmesg_problems_since "$FAULT_MARK"
rdev_add "$RDEV1" veth1 h1
xfer_fresh $((port + 1))
echo "link delete under load: finished, both ends failed cleanly, new device works"
