#!/usr/bin/env bash
# The peer guest loses power mid-transfer. Guest b (server) receives an
# ib_write_bw stream over siw on eth0; once 8 MiB have arrived it powers
# off at once (power_cut: no process exits, no FIN, no RST, the link goes
# silent). Guest a (client, still sending) must see the connection fail:
# its TCP gives up (net.ipv4.tcp_retries2 lowered to 5 here, about 13 s;
# the default 15 takes about 15 minutes), siw logs the lost connection
# naming the device (and counts it, conn_lost), the QP ends in error and perftest exits non-zero
# (an error completion or a refused post) instead of hanging. Afterwards
# a holds no QP of the device, a fresh connection (siw over a local veth)
# moves verified data, and the module unloads.
# timeout: 420
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ib_write_bw ss sysctl ping
need_tool siw_datacheck
[[ -n ${SIW_ROLE:-} ]] || skip "pair group case run outside a pair"
[[ $RDEV_LTYPE == siw ]] || skip "the power cut case runs on siw (SIW_DEV_TYPE=$SIW_DEV_TYPE)"
m=$(dmesg_mark)
rdev_module_load
dev=${RDEV_PFX}p0
rdev_add "$dev" eth0
port=18950
n=200000	# 64 KiB each: far more than moves before the cut
rx_bytes() { rdma_stat "$dev" rx_bytes; }

if [[ $SIW_ROLE == b ]]; then
	timeout 900 ib_write_bw -d "$dev" -R -p "$port" -F -s 65536 -n "$n" >"$TMPD/srv.log" 2>&1 &
	wait_for 30 tcp_listening "$port" || fail "ib_write_bw server not listening"
	pair_barrier poweroff-up 120 45990
	_mid() { (($(rx_bytes) >= 8 << 20)); }
	wait_for 120 _mid || fail "the transfer did not start: rx_bytes $(rx_bytes); server: $(tail -n 5 "$TMPD/srv.log")"
	info "received $(rx_bytes) bytes, the server still running: power cut now"
	power_cut
fi

old=$(sysctl -n net.ipv4.tcp_retries2)
sysctl -qw net.ipv4.tcp_retries2=5
on_exit "sysctl -qw net.ipv4.tcp_retries2=$old"
lost0=$(rdma_stat "$dev" conn_lost)
pair_barrier poweroff-up 120 45990
t0=$SECONDS rc=0
timeout 300 ib_write_bw -d "$dev" -R -p "$port" -F -s 65536 -n "$n" "$SIW_PEER_IP" >"$TMPD/cli.log" 2>&1 || rc=$?
secs=$((SECONDS - t0))
tail -n 15 "$TMPD/cli.log"
info "ib_write_bw client ended after ${secs}s with rc $rc; device $dev sent $(rdma_stat "$dev" tx_bytes) bytes"
((rc != 124)) || fail "ib_write_bw still running 300 s after the start: the lost peer was not noticed"
((rc != 0)) || fail "ib_write_bw completed $n x 64 KiB although the peer powered off"
! ping -c 2 -W 1 "$SIW_PEER_IP" >/dev/null 2>&1 || fail "the peer still answers ping: it did not power off"
lost=$(dmesg_since "$m" | grep -E "$dev: connection to $SIW_PEER_IP:[0-9]+ lost: -[0-9]+" || true)
[[ -n $lost ]] || fail "no kernel log line on the lost connection: $(dmesg_since "$m" | grep -F "$dev" | tail -n 5)"
info "kernel log: $lost"
((lost_n = $(rdma_stat "$dev" conn_lost) - lost0)) || true
((lost_n == 1)) || fail "conn_lost of $dev moved by $lost_n, expected 1"
no_qps_left() { [[ -z $(res_left 'lqpn [1-9]' qp link "$dev/1") ]]; }
wait_for 30 no_qps_left ||
	fail "QPs of $dev left after the client exited: $(rdma res show qp link "$dev/1")"

# a fresh connection works: siw on a local veth, verified data
rdev_veth_local
bg srv "$BIN/siw_datacheck" -s -b "$RDEV_IP" -p $((port + 1)) -t 60
wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
timeout 300 "$BIN/siw_datacheck" -c "$RDEV_IP" -p $((port + 1)) -n "$(scale 50 10)" -S 77 -m 262144 -t 60 >"$TMPD/dc.log" 2>&1 ||
	{ show srv; cat "$TMPD/dc.log"; fail "datacheck over a fresh connection failed"; }
wait_pid "$BG_PID" 60 || { show srv; fail "datacheck server failed"; }
grep '^ok - client' "$TMPD/dc.log" || fail "datacheck printed no summary"
rdma link delete "$RDEV"
rdma link delete "$dev"
siw_unload
dmesg_problems_since "$m"
echo "peer power cut passed (noticed after ${secs}s)"
