#!/usr/bin/env bash
# siw_datacheck between two guests over the qemu link (eth0): role b is the
# server (10.77.0.2), role a the client. siw device siw0 on eth0 in each.
# Twice: TCP copying the payload (default), then zero-copy (zcopy_min=1).
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ss
need_tool siw_datacheck
[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
m=$(dmesg_mark)
rdev_module_load
RDEV=${RDEV_PFX}0
rdev_add "$RDEV" eth0
seed=${SIW_DATACHECK_SEED:-4242}
port=18900
par=/sys/module/siw/parameters
# pass 1 copies (default), pass 2 hands payload pages to TCP (zcopy_min=1)
# over the virtio-net link, where the pages reach the device unchanged
run_pass() { # NAME ITERS MAX
	local name=$1 iters=$2 max=$3 rc=0
	if [[ $SIW_ROLE == b ]]; then
		"$BIN/siw_datacheck" -s -b "$SIW_MY_IP" -p "$port" -t 90 >"$TMPD/srv.log" 2>&1 &
		spid=$!
		on_exit "kill $spid"
		wait_for 20 tcp_listening "$port" || true
		pair_barrier "datacheck-$name" 120 $((port + 27000))
		wait_pid "$spid" 1500 || rc=$?
		cat "$TMPD/srv.log"
		((rc == 0)) || fail "datacheck server failed ($name, rc=$rc)"
	else
		pair_barrier "datacheck-$name" 120 $((port + 27000))
		timeout 1500 "$BIN/siw_datacheck" -c "$SIW_PEER_IP" -p "$port" -n "$iters" -m "$max" -S "$seed" -t 90 >"$TMPD/cli.log" 2>&1 || rc=$?
		cat "$TMPD/cli.log"
		((rc == 0)) || fail "datacheck client failed ($name, rc=$rc, seed $seed)"
	fi
	port=$((port + 1))
}
zc_bytes() { rdma stat show link "$RDEV/1" | grep -oE 'tx_zcopy_bytes [0-9]+' | awk '{ print $2 }'; }
run_pass copy "$(scale 200 30)" "$(scale 4194304 262144)"
if [[ $SIW_DEV_TYPE != siw ]]; then
	dmesg_problems_since "$m"
	echo "pair datacheck passed ($SIW_ROLE, $SIW_DEV_TYPE: no zero-copy pass)"
	exit 0
fi
[[ -w $par/zcopy_min ]] || fail "siw has no writable zcopy_min parameter"
echo 1 >"$par/zcopy_min"
on_exit "echo 0 >$par/zcopy_min"
b=$(zc_bytes)
run_pass zcopy "$(scale 100 20)" "$(scale 4194304 262144)"
b=$(($(zc_bytes) - b))
echo "# zero-copy bytes sent by $SIW_ROLE: $b"
((b > 0)) || fail "nothing was sent zero-copy with zcopy_min=1"
echo 0 >"$par/zcopy_min"
dmesg_problems_since "$m"
echo "pair datacheck passed ($SIW_ROLE)"
