#!/usr/bin/env bash
# Verbs object boundaries (siw_objects): PD/CQ/QP/SRQ/MR limits, access
# flag combinations, keys, CQ arming, QP state + flush, on siw0 (lo).
# SIW_DEV_TYPE=rxe|siw-ref runs the same checks on another device type.
# timeout: 240
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_objects
m=$(dmesg_mark)
rdev_lo
rc=0
timeout 280 "$BIN/siw_objects" -d "$RDEV" >"$TMPD/obj.log" 2>&1 || rc=$?
cat "$TMPD/obj.log"
((rc == 0)) || fail "siw_objects: $(grep -c '^FAIL' "$TMPD/obj.log") check(s) failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/obj.log")"
dmesg_problems_since "$m"
