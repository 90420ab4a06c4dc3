#!/usr/bin/env bash
# Payload corruption that TCP cannot catch: the client's connection runs
# through a relay (tests/tools/siw_corrupt_proxy.py) that inverts one
# byte of the client -> server stream now and then; the relay's own TCP
# checksums are correct, as behind a NIC or middlebox that corrupts after
# checksumming. With MPA CRC negotiated every such FPDU must be caught
# (rx_crc_err; or rx_proto_err when the flip hit a header the receiver
# checks first), answered with a Terminate, and end the connection on
# both ends with no corrupted byte reaching a completion; FPDUs of MSS
# size are checked before any byte is placed (rx_crc_late stays). Without CRC
# iWARP has nothing left to catch it: the same run shows what then
# reaches the application (reported; docs/reliability.md says so).
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin python3

# corrupt_run PORT EVERY: server on PORT, relay on PORT+100, client through it
corrupt_run() {
	local port=$1 relay=$(($1 + 100))
	bg proxy ip netns exec h2 python3 "$SIW_TOP/tests/tools/siw_corrupt_proxy.py" \
		--listen "$H2_IP:$relay" --to "$H2_IP:$port" --skip "$(scale 6000000 1000000)" --every "$2"
	wait_log "$TMPD/proxy.log" '^# listening' 20 || { show proxy; fail "relay did not start"; }
	XFER_TO=$relay xfer_start "$port"
	wait_for 120 grep -q '^# flipped' "$TMPD/proxy.log" || { show proxy; fail "the relay flipped nothing"; }
}
errs() { echo $(($(rdma_stat "$RDEV2" rx_crc_err) + $(rdma_stat "$RDEV2" rx_proto_err))); }

# with CRC
crc_param Y
port=18910
crc0=$(rdma_stat "$RDEV2" rx_crc_err) err0=$(errs) term0=$(rdma_stat "$RDEV2" term_tx)
late0=$(rdma_stat "$RDEV2" rx_crc_late)
corrupt_run "$port" 300000
xfer_wait 120
xfer_failed
show proxy | tail -n 3
crc=$(($(rdma_stat "$RDEV2" rx_crc_err) - crc0))
caught=$(($(errs) - err0))
term=$(($(rdma_stat "$RDEV2" term_tx) - term0))
info "with CRC: caught +$caught (rx_crc_err +$crc), term_tx +$term on $RDEV2"
((caught >= 1)) || fail "a flipped byte reached $RDEV2 but neither rx_crc_err nor rx_proto_err moved"
((term >= 1)) || fail "$RDEV2 caught a corrupted FPDU but sent no Terminate"
# MSS-sized FPDUs: each was CRC-checked whole before any of it was placed
(($(rdma_stat "$RDEV2" rx_crc_late) == late0)) ||
	fail "$RDEV2 placed FPDUs before their CRC check (rx_crc_late moved)"
dmesg_since "$FAULT_MARK" | grep -qE "$RDEV2: QP [0-9]+: received .*terminating" ||
	fail "no kernel log line names $RDEV2 and the error"
dmesg_problems_since "$FAULT_MARK"
xfer_fresh $((port + 1))

# without CRC: nothing in iWARP can notice; report what got through
crc_param N
port=18920
crc0=$(rdma_stat "$RDEV2" rx_crc_err) term0=$(rdma_stat "$RDEV2" term_tx)
FAULT_MARK=$(dmesg_mark)
corrupt_run "$port" 300000
XFER_CRC=0 XFER_SRC=0
wait_pid "$XFER_CLI" 120 || XFER_CRC=$?
wait_pid "$XFER_SRV" 120 || XFER_SRC=$?
show cli | tail -n 3
show srv | tail -n 3
((XFER_CRC != 124 && XFER_SRC != 124)) || fail "without CRC: transfer hung after the corruption"
((XFER_CRC != 0 || XFER_SRC != 0)) || fail "without CRC: the corruption went unnoticed by everyone"
(($(rdma_stat "$RDEV2" rx_crc_err) == crc0)) || fail "rx_crc_err moved without CRC negotiated"
placed=$(cat "$TMPD/cli.log" "$TMPD/srv.log" | grep -c 'mismatch' || true)
info "without CRC: corrupted data reached the application $placed time(s);" \
	"protocol errors: term_tx +$(($(rdma_stat "$RDEV2" term_tx) - term0))"
dmesg_problems_since "$FAULT_MARK"
echo "with CRC every flipped FPDU was caught; without CRC corruption reached the application $placed time(s)"
