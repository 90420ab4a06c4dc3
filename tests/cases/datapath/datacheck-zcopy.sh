#!/usr/bin/env bash
# Zero-copy transmit (module parameter zcopy_min): payload pages handed to
# TCP by reference, completions only after the peer's ACK released them.
# siw_datacheck (random SEND/WRITE/READ, multi-SGE, unaligned, unsignaled,
# fenced; guard bytes) between netns h1 and h2 with zcopy_min=1, once with
# MPA CRC and once without; the devices' tx_zcopy_bytes counters must show
# that both sides sent zero-copy (Send/Write payload, Read Responses), and
# afterwards no zero-copy reference may keep the module busy.
# timeout: 500
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip
need_tool siw_datacheck
[[ $SIW_DEV_TYPE == siw ]] || skip "zero-copy is a parameter of this project's siw"
m=$(dmesg_mark)
rdev_netns
par=/sys/module/siw/parameters
[[ -w $par/zcopy_min ]] || fail "siw has no writable zcopy_min parameter"
echo 1 >"$par/zcopy_min"
on_exit "if [[ -w $par/zcopy_min ]]; then echo 0 >$par/zcopy_min; echo 0 >$par/mpa_crc_required; fi"

zc_bytes() { # DEV -> tx_zcopy_bytes
	rdma stat show link "$1/1" | grep -oE 'tx_zcopy_bytes [0-9]+' | awk '{ print $2 }'
}
seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
port=18700
run_pair() { # ITERS MAXSIZE CRC
	local iters=$1 max=$2 crc=$3 rc=0 crc_rc=0 b1 b2
	echo "$crc" >"$par/mpa_crc_required"
	b1=$(zc_bytes "$RDEV1") b2=$(zc_bytes "$RDEV2")
	bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 60
	local spid=$BG_PID
	wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
	timeout 900 ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$iters" -S "$seed" -m "$max" -t 60 >"$TMPD/cli.log" 2>&1 || crc_rc=$?
	wait_pid "$spid" 60 || rc=$?
	show cli; show srv
	((crc_rc == 0)) || fail "datacheck client failed (rc=$crc_rc, seed $seed, max $max, crc $crc)"
	((rc == 0)) || fail "datacheck server failed (rc=$rc, seed $seed, max $max, crc $crc)"
	grep -q '^ok - client' "$TMPD/cli.log" || fail "client printed no summary"
	b1=$(($(zc_bytes "$RDEV1") - b1)) b2=$(($(zc_bytes "$RDEV2") - b2))
	echo "# crc=$crc: zero-copy bytes sent: $RDEV1 $b1, $RDEV2 $b2"
	((b1 > 0)) || fail "$RDEV1 (Send/Write side) sent nothing zero-copy"
	((b2 > 0)) || fail "$RDEV2 (Read Response side) sent nothing zero-copy"
	port=$((port + 1))
}
run_pair "$(scale 200 40)" "$(scale 4194304 262144)" 1
run_pair "$(scale 200 40)" "$(scale 4194304 262144)" 0
echo 0 >"$par/mpa_crc_required"

# every skb reference is gone once the connections are: unload must work
ip netns exec h1 rdma link delete "$RDEV1"
ip netns exec h2 rdma link delete "$RDEV2"
ok=0
for _ in $(seq 1 30); do
	if rmmod siw 2>/dev/null; then ok=1; break; fi
	sleep 1
done
((ok)) || fail "siw still in use 30 s after its devices were deleted (refcnt $(cat /sys/module/siw/refcnt 2>/dev/null))"
dmesg_problems_since "$m"
echo "zero-copy datacheck passed (seed $seed)"
