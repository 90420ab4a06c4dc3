#!/usr/bin/env bash
# A lossy, reordering, duplicating and delaying link (netem on both veth
# ends, MPA CRC negotiated): TCP recovers underneath, so the data-check
# must finish with every byte intact, and TCP must show it retransmitted
# (else the impairment did not act).
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/faults.bash"
faults_begin tc nstat
crc_param Y
for i in 1 2; do
	run ip netns exec "h$i" tc qdisc add dev "veth$i" root netem \
		delay 2ms 1ms loss 1% duplicate 1% reorder 10% 50%
done
ip netns exec h1 nstat -n
port=18900
srv_cli 500 netem "$port" \
	"$BIN/siw_datacheck -s -b $H2_IP -p $port -t 60" \
	"$BIN/siw_datacheck -c $H2_IP -p $port -n $(scale 150 30) -S $port -m 262144 -t 60"
((CLI_RC == 0 && SRV_RC == 0)) || fail "data-check failed on an impaired link (client $CLI_RC, server $SRV_RC)"
retrans=$(ip netns exec h1 nstat -a TcpRetransSegs | awk '/TcpRetransSegs/ { print $2 }')
info "TCP segments retransmitted by h1: ${retrans:-0}"
((${retrans:-0} > 0)) || fail "netem did not act: no TCP retransmission"
dmesg_problems_since "$FAULT_MARK"
echo "data intact over loss, reordering, duplication and delay"
