#!/usr/bin/env bash
# Hostile user process (siw_hostile): garbage SQEs/RQEs written straight
# into the mmap'd rings of a connected QP (bad opcodes incl. kernel-only
# ones, num_sge 200, huge/overflowing lengths, bogus lkeys, oversized
# inline, NULL/kernel addresses), doorbell rung like libsiw does; fields
# flipped while the kernel reads the SQE. Each must end in an error
# completion or a QP error, never hang; then a fresh QP pair must move data
# correctly. The kernel log must stay clean (no Oops/KASAN/WARN).
# Needs libsiw rings: siw only (SIW_DEV_TYPE=siw or siw-ref). The pair
# connects to itself over a veth address (see rdev_veth_local).
# timeout: 400
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma
need_tool siw_hostile
[[ $RDEV_LTYPE == siw ]] || skip "siw_hostile needs libsiw rings (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_veth_local
rc=0
timeout 1400 "$BIN/siw_hostile" -a "$RDEV_IP" -p 18700 -t "$(scale 10 40)" -f "$(scale 5 2)" >"$TMPD/h.log" 2>&1 || rc=$?
cat "$TMPD/h.log"
((rc == 0)) || fail "siw_hostile failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/h.log")"
dmesg_since "$m" | tail -n 30
dmesg_problems_since "$m"
echo "hostile passed"
