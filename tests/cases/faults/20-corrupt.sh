#!/usr/bin/env bash
# Payload corruption that TCP does not catch: tc pedit rewrites byte 300
# of every 50th client -> server segment after TCP computed its checksum
# (veth passes it on unverified, like a NIC that corrupts after its own
# checksum offload). With MPA CRC negotiated every such FPDU must be
# caught: rx_crc_err counts, the receiver sends a Terminate, both ends see
# the connection fail, no corrupted byte reaches the application. Without
# CRC, iWARP has nothing left to catch it: the same run shows what then
# reaches the application (reported, as the README states it).
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
need_cmd rdma ip tc
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns
run ip netns exec h1 tc qdisc add dev veth1 root handle 1: prio

corrupt_on() { # PORT
	run ip netns exec h1 tc filter add dev veth1 parent 1: protocol ip prio 1 \
		u32 match ip dport "$1" 0xffff \
		action gact ok random determ pipe 50 \
		action pedit munge offset 300 u8 set 0xa5
}
corrupt_off() { run ip netns exec h1 tc filter del dev veth1 parent 1: prio 1; }

# with CRC
crc_param Y
port=18910
crc0=$(rdma_stat "$RDEV2" rx_crc_err) term0=$(rdma_stat "$RDEV2" term_tx)
xfer_start "$port"
corrupt_on "$port"
xfer_wait 120
corrupt_off
xfer_failed
crc=$(($(rdma_stat "$RDEV2" rx_crc_err) - crc0))
term=$(($(rdma_stat "$RDEV2" term_tx) - term0))
info "with CRC: rx_crc_err +$crc, term_tx +$term on $RDEV2"
((crc >= 1)) || fail "corrupted FPDUs reached $RDEV2 but rx_crc_err did not move"
((term >= 1)) || fail "$RDEV2 caught a CRC error but sent no Terminate"
dmesg_since "$m" | grep -qiE "$RDEV2.*crc" || fail "no kernel log line names $RDEV2 and the CRC error"
dmesg_problems_since "$m"
xfer_fresh $((port + 1))

# without CRC: nothing in iWARP can notice; report what got through
crc_param N
port=18920
crc0=$(rdma_stat "$RDEV2" rx_crc_err)
m=$(dmesg_mark)
xfer_start "$port"
corrupt_on "$port"
XFER_CRC=0 XFER_SRC=0
wait_pid "$XFER_CLI" 120 || XFER_CRC=$?
wait_pid "$XFER_SRV" 120 || XFER_SRC=$?
corrupt_off
((XFER_CRC != 124 && XFER_SRC != 124)) || fail "without CRC: transfer hung after the corruption"
((XFER_CRC != 0 || XFER_SRC != 0)) || fail "without CRC: the corruption went unnoticed by everyone"
(($(rdma_stat "$RDEV2" rx_crc_err) == crc0)) || fail "rx_crc_err moved without CRC negotiated"
placed=$(grep -ch 'mismatch' "$TMPD/cli.log" "$TMPD/srv.log" | awk '{ s += $1 } END { print s + 0 }')
info "without CRC: corrupted data placed and caught only by the application: $placed time(s);" \
	"protocol errors (Terminate sent): $(rdma_stat "$RDEV2" term_tx)"
dmesg_problems_since "$m"
echo "CRC caught every corrupted FPDU; without CRC, corruption reached the application $placed time(s)"
