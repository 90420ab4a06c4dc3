#!/usr/bin/env bash
# Byte-exact data integrity: siw_datacheck server (netns h2) and client
# (netns h1) over rdma_cm on siw devices bound to veth2/veth1. Random
# SEND/WRITE/READ, random sizes 0..max, multi-SGE, unaligned, inline,
# fenced and unsignaled WRs; guard bytes around every buffer.
# SIW_DATACHECK_SEED=N reproduces a run; SIW_DEV_TYPE=rxe|siw-ref compares.
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip
need_tool siw_datacheck
rdev_netns

seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
port=18600
run_pair() { # ITERS MAXSIZE
	local iters=$1 max=$2 rc=0 crc=0
	bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 60
	local spid=$BG_PID
	wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
	timeout 900 ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$iters" -S "$seed" -m "$max" -t 60 >"$TMPD/cli.log" 2>&1 || crc=$?
	wait_pid "$spid" 60 || rc=$?
	show cli; show srv
	((crc == 0)) || fail "datacheck client failed (rc=$crc, seed $seed, max $max)"
	((rc == 0)) || fail "datacheck server failed (rc=$rc, seed $seed, max $max)"
	grep -q '^ok - client' "$TMPD/cli.log" || fail "client printed no summary"
	port=$((port + 1))
}
if is_debug_kernel; then
	run_pair 60 65536
	run_pair 10 1048576
else
	run_pair 300 262144
	run_pair 40 8388608
fi
echo "datacheck passed (seed $seed)"
