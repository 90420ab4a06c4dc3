#!/usr/bin/env bash
# perftest (ib_send/write/read _bw and _lat) with -R (rdma_cm; required for
# iWARP) between netns h1 (client) and h2 (server) over siw on veth1/veth2.
# Stock kernel: -a size sweep with -n 50, plus -q 2 (--full; the default
# run: the bandwidth tools over a size sweep with -n 10, the latency tools
# at 64 B and 64 KiB, -q 2 once); debug kernel: a few sizes with small
# counts. Each run must exit 0 on both sides and the
# client must print a results table. The client's small-message streams
# must have gone through the doorbell hand-over to the TX work (counter
# tx_db_handoff), the path where the slot of the message being sent stays
# valid and libsiw posts behind it without a system call: a slot that was
# never let go of would hang a run here.
# timeout: 1500
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat rdma ss
m=$(dmesg_mark)
rdev_netns
h0=$(rdma_stat "$RDEV1" tx_db_handoff)
[[ -n $h0 ]] || fail "$RDEV1 has no tx_db_handoff counter"
port=19000
# pt NAME ARGS...: one server/client run (repeated when perftest's TSC
# calibration missed, srv_cli_pt), checked: both sides exit 0 and the
# client prints a results table with figures.
pt() {
	local name=$1; shift
	srv_cli_pt 600 "$name-$port" "$port" \
		"$name -d $RDEV2 -R -p $port -F $*" \
		"$name -d $RDEV1 -R -p $port -F $* $H2_IP"
	local cli=$TMPD/$name-$port.cli
	((CLI_RC == 0)) || fail "$name $* (client) exited $CLI_RC"
	((SRV_RC == 0)) || fail "$name $* (server) exited $SRV_RC"
	grep -qE '^ *#bytes' "$cli" || fail "$name $*: no results table header"
	pt_result_ok "$cli" "$*" || fail "$name $*: no result row with figures"
	((PT_NOCLOCK == 0)) || info "$name $*: no figures, perftest's TSC calibration missed in all 3 runs; both exited 0, a row of all its iterations"
	port=$((port + 1))
	sleep 1
}
if is_debug_kernel; then
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		pt "$t" -s 4096 -n 20
		pt "$t" -s 65536 -n 10
	done
	for t in ib_send_lat ib_write_lat ib_read_lat; do
		pt "$t" -s 64 -n 20
	done
	pt ib_write_bw -q 2 -s 4096 -n 10
elif ((!${SIW_TEST_FULL:-0})); then
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		pt "$t" -a -n 10
	done
	for t in ib_send_lat ib_write_lat ib_read_lat; do
		pt "$t" -s 64 -n 200
		pt "$t" -s 65536 -n 50
	done
	pt ib_write_bw -q 2 -s 65536 -n 100
else
	for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
		pt "$t" -a -n 50
	done
	pt ib_write_bw -q 2 -s 65536 -n 200
	pt ib_send_bw -q 2 -s 4096 -n 200
	pt ib_read_bw -q 2 -s 65536 -n 100
fi
h=$(($(rdma_stat "$RDEV1" tx_db_handoff) - h0))
((h > 0)) || fail "the client's streams never handed a doorbell to the TX work (tx_db_handoff +0)"
info "doorbells handed to the TX work by the client: $h"
dmesg_problems_since "$m"
echo "perftest passed"
