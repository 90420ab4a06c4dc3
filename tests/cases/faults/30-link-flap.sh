#!/usr/bin/env bash
# The link goes down for 3 s in the middle of a transfer: the device's
# port goes DOWN and ACTIVE again, TCP retransmits what was lost, and the
# connection survives: the data-check finishes with every byte intact.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin
port=18930
srv=(ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 60)
bg srv "${srv[@]}"
XFER_SRV=$BG_PID
wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
bg cli ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$(scale 150 30)" \
	-S "$port" -m 262144 -t 60
XFER_CLI=$BG_PID
b0=$(rdma_stat "$RDEV2" rx_bytes)
moving() { (($(rdma_stat "$RDEV2" rx_bytes) > b0 + $(scale 1000000 200000))); }
wait_for 60 moving || { show cli; fail "no data moved"; }
run ip -n h1 link set veth1 down
wait_for 10 test "$(ibdev_port_state "$RDEV1")" = PORT_DOWN || fail "$RDEV1 did not go DOWN"
sleep 3
run ip -n h1 link set veth1 up
wait_for 15 test "$(ibdev_port_state "$RDEV1")" = PORT_ACTIVE || fail "$RDEV1 did not come back ACTIVE"
xfer_wait 300
((XFER_CRC == 0 && XFER_SRC == 0)) || fail "the connection did not survive a 3 s link flap"
dmesg_problems_since "$FAULT_MARK"
echo "transfer survived a 3 s link flap, data intact"
