#!/usr/bin/env bash
# siw_datacheck --srq: the server receives through an SRQ; phase 1 arms
# srq_limit=8 with 16 receives posted, the client sends 8 (no event
# allowed), then 8 more: IBV_EVENT_SRQ_LIMIT_REACHED must arrive and the
# limit must read back as 0 (disarmed). Then the normal randomized data
# check runs with all receives through the SRQ.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ss
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns
seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
srv_cli 900 srq 18690 \
	"$BIN/siw_datacheck -s --srq -b $H2_IP -p 18690 -t 60" \
	"$BIN/siw_datacheck -c $H2_IP -p 18690 --srq -n $(scale 200 30) -m $(scale 1048576 65536) -S $seed -t 60"
((CLI_RC == 0)) || fail "datacheck --srq client failed (rc=$CLI_RC, seed $seed)"
((SRV_RC == 0)) || fail "datacheck --srq server failed (rc=$SRV_RC, seed $seed)"
grep -q '^ok - srq: IBV_EVENT_SRQ_LIMIT_REACHED' "$TMPD/srq.srv" || fail "no SRQ limit event check passed"
dmesg_problems_since "$m"
echo "datacheck srq passed"
