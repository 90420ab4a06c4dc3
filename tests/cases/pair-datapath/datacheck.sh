#!/usr/bin/env bash
# siw_datacheck between two guests over the qemu link (eth0): role b is the
# server (10.77.0.2), role a the client. siw device siw0 on eth0 in each.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib.sh"
source "$SIW_TOP/tests/tools/caselib.sh"
need_cmd rdma ss
need_tool siw_datacheck
[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
m=$(dmesg_mark)
rdev_module_load
RDEV=${RDEV_PFX}0
rdev_add "$RDEV" eth0
seed=${SIW_DATACHECK_SEED:-4242}
port=18900
iters=$(scale 200 30) max=$(scale 4194304 262144)
if [[ $SIW_ROLE == b ]]; then
	"$BIN/siw_datacheck" -s -b "$SIW_MY_IP" -p "$port" -t 90 >"$TMPD/srv.log" 2>&1 &
	spid=$!
	on_exit "kill $spid"
	wait_listen_local() { ss -Hltn "sport = :$port" | grep -q .; }
	wait_for 20 wait_listen_local || true
	pair_barrier datacheck-listening 120
	rc=0
	wait_pid "$spid" 1500 || rc=$?
	cat "$TMPD/srv.log"
	((rc == 0)) || fail "datacheck server failed (rc=$rc)"
else
	pair_barrier datacheck-listening 120
	rc=0
	timeout 1500 "$BIN/siw_datacheck" -c "$SIW_PEER_IP" -p "$port" -n "$iters" -m "$max" -S "$seed" -t 90 >"$TMPD/cli.log" 2>&1 || rc=$?
	cat "$TMPD/cli.log"
	((rc == 0)) || fail "datacheck client failed (rc=$rc, seed $seed)"
fi
dmesg_problems_since "$m"
echo "pair datacheck passed ($SIW_ROLE)"
