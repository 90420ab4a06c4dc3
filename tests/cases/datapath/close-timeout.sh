#!/usr/bin/env bash
# An orderly close that times out must not throw away what completed as
# sent. A copied Send completes once TCP holds it; rdma_disconnect then
# queues the FIN behind it and waits 5 s (the close timeout) for the
# peer's FIN. A close that expired used to reset the connection: the reset
# discarded data TCP had not delivered yet (a slow receiver, a lossy
# path), so the sender saw every Send succeed and DISCONNECTED while the
# peer never got them (the soak of 2026-12-05: a receive flushed on the
# server before a BYE whose send had completed). Now TCP keeps delivering
# it, as after any orderly close, and the expiry is counted
# (close_timeout) and logged.
#
# siw_zcclose client (h1) connects to its server (h2), and the path
# h1 -> h2 is black-holed (netem loss 100%). The client's N small Sends
# (copied: zcopy_min 0) complete, it disconnects, and its close times out
# (DISCONNECTED no earlier than 4.5 s). Then the hole is removed: the
# server must receive all N messages and the client's FIN (exit 0). With
# the reset, the server received nothing and stayed connected.
# timeout: 240
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip tc
need_tool siw_zcclose
[[ $SIW_DEV_TYPE == siw ]] || skip "the close timeout and its counter are this project's siw's"
m=$(dmesg_mark)
rdev_netns
port=18797 n=4 size=1024
# copied Sends (zcopy_min 0); from the hole on nothing the client sends
# reaches the server
zcclose_start 0 "$port" "$n" "$size" 120
spid=$ZC_SPID cpid=$ZC_CPID
ct0=$(rdma_stat "$RDEV1" close_timeout)
zc0=$(rdma_stat "$RDEV1" tx_zcopy_msg)
f0=$(rdma_stat "$RDEV1" tx_fpdu)
[[ -n $ct0 && -n $zc0 && -n $f0 ]] || fail "$RDEV1 has no close_timeout, tx_zcopy_msg or tx_fpdu counter"
touch "$TMPD/go.post"
wait_log "$TMPD/cli.log" '^# posted' 30 || { show cli; fail "client did not post its sends"; }
# the FIN goes behind the Sends: all of them in TCP before the close
sent() { (($(rdma_stat "$RDEV1" tx_fpdu) - f0 >= n)); }
wait_for 30 sent || { show cli; fail "$n Sends posted, $(($(rdma_stat "$RDEV1" tx_fpdu) - f0)) FPDUs sent"; }
touch "$TMPD/go.close"
wait_log "$TMPD/cli.log" '^# disconnecting' 30 || { show cli; fail "client did not disconnect"; }
crc=0
wait_pid "$cpid" 30 || crc=$?
show cli
((crc == 0)) || fail "client failed or did not exit within 30 s (rc=$crc)"
grep -qE "^# sends: ok $n, flushed 0, other 0\$" "$TMPD/cli.log" ||
	fail "the client's $n Sends did not all complete successfully: $(grep '^# sends:' "$TMPD/cli.log" || true)"
dsec=$(sed -nE 's/^# disconnected after ([0-9.]+) s$/\1/p' "$TMPD/cli.log")
[[ -n $dsec ]] || fail "client saw no DISCONNECTED"
awk -v s="$dsec" 'BEGIN { exit !(s >= 4.5) }' ||
	fail "DISCONNECTED came $dsec s after rdma_disconnect, before the 5 s close timeout: the hole did not hold"
ct=$(($(rdma_stat "$RDEV1" close_timeout) - ct0))
((ct == 1)) || fail "close_timeout of $RDEV1 moved by $ct, expected 1"
zc=$(($(rdma_stat "$RDEV1" tx_zcopy_msg) - zc0))
((zc == 0)) || fail "$zc Sends went zero-copy (zcopy_min 0): not the copied case"
dmesg_since "$m" | grep -q "$RDEV1: peer .* did not close within" ||
	fail "no kernel log line of $RDEV1 naming the expired close"

# the path comes back: TCP (the socket is the kernel's alone now) must
# still deliver the Sends and the FIN
tcp_conns() { for ns in h1 h2; do ip netns exec "$ns" ss -tnoi "( sport = :$port or dport = :$port )" | sed "s/^/#   $ns: /"; done; }
info "TCP after the client's close:"
tcp_conns
run ip netns exec h1 tc qdisc del dev veth1 root
src=0
wait_pid "$spid" 60 || src=$?
show srv
((src == 0)) || tcp_conns
((src == 0)) || fail "server failed or still connected 60 s after the path came back (rc=$src): the Sends that completed never arrived"
grep -qE "^# received $n message\(s\)" "$TMPD/srv.log" ||
	fail "the server did not receive the $n completed Sends: $(grep '^# received' "$TMPD/srv.log" || true)"
dmesg_problems_since "$m"
