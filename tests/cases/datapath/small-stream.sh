#!/usr/bin/env bash
# Streams of small messages (issue 24): ib_write_bw and ib_send_bw at 64 B
# with -R between netns h1 (client) and h2 (server). A user's Send or
# Write of up to 256 B keeps its send-queue slot valid while it is sent,
# and a stream of them is left to the TX work (counter tx_db_handoff):
# libsiw then posts behind the held slot without a doorbell. A slot never
# let go of would leave a post waiting for a doorbell that never comes,
# and the run would hang here. Checked for each tool: both sides exit 0,
# the client reports figures (or, after perftest's missed clock
# calibration, every iteration done), the client's device handed
# doorbells to the TX work during the run, and it sent at least one FPDU
# per message. (datapath/perftest checks the counter over its whole size
# sweep, with --full on stock.)
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd ib_send_bw ib_write_bw rdma
m=$(dmesg_mark)
rdev_netns
port=19300
n=$(scale 20000 2000)
for t in ib_write_bw ib_send_bw; do
	h0=$(rdma_stat "$RDEV1" tx_db_handoff)
	f0=$(rdma_stat "$RDEV1" tx_fpdu)
	[[ -n $h0 && -n $f0 ]] || fail "$RDEV1 has no tx_db_handoff or tx_fpdu counter"
	srv_cli_pt 300 "$t-$port" "$port" \
		"$t -d $RDEV2 -R -p $port -F -s 64 -n $n" \
		"$t -d $RDEV1 -R -p $port -F -s 64 -n $n $H2_IP"
	cli=$TMPD/$t-$port.cli
	((CLI_RC == 0)) || fail "$t 64 B (client) exited $CLI_RC"
	((SRV_RC == 0)) || fail "$t 64 B (server) exited $SRV_RC"
	pt_result_ok "$cli" "-s 64 -n $n" || fail "$t 64 B: no result row with figures"
	h=$(($(rdma_stat "$RDEV1" tx_db_handoff) - h0))
	f=$(($(rdma_stat "$RDEV1" tx_fpdu) - f0))
	((h > 0)) || fail "$t 64 B x $n: no doorbell handed to the TX work (tx_db_handoff +0)"
	((f >= n)) || fail "$t 64 B x $n: only $f FPDUs sent"
	info "$t 64 B x $n: $h doorbells handed to the TX work, $f FPDUs sent"
	port=$((port + 1))
done
dmesg_problems_since "$m"
echo "small-stream passed"
