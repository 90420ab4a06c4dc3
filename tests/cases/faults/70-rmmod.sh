#!/usr/bin/env bash
# rmmod siw under load: every device is unregistered, rdma_cm tears the
# connection down, the applications' work requests are flushed and they
# exit with an error; then the module goes. Nothing may hang, and the
# module must load and move data again.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
[[ $SIW_DEV_TYPE == siw ]] || skip "unloads this project's siw"
faults_begin
port=18970
xfer_start "$port"
timeout 120 rmmod siw >"$TMPD/rmmod.log" 2>&1 &
rm_pid=$!
xfer_wait 90
wait_pid "$rm_pid" 120 || fail "rmmod siw under load failed or hung ($(cat "$TMPD/rmmod.log"))"
xfer_failed
[[ ! -e /sys/module/siw ]] || fail "siw still loaded"
dmesg_problems_since "$FAULT_MARK"
siw_load
rdev_add "$RDEV1" veth1 h1
rdev_add "$RDEV2" veth2 h2
xfer_fresh $((port + 1))
echo "rmmod under load: both ends failed cleanly, module unloaded, reload works"
