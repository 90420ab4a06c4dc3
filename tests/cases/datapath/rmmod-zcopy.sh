#!/usr/bin/env bash
# rmmod while zero-copy sends are in flight: TCP still holds payload pages
# of zero-copy messages (a 20 ms netem delay keeps the peer's ACKs away a while)
# when both data-check processes are killed and the module is removed.
# Each zero-copy message holds the device until TCP releases it, so the
# unload waits for the releases instead of freeing what their callbacks
# run in: the module must go within 60 s, with no kernel report, and
# load and work again afterwards.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip tc
need_tool siw_datacheck
[[ $SIW_DEV_TYPE == siw ]] || skip "zero-copy is a parameter of this project's siw"
m=$(dmesg_mark)
rdev_netns
par=/sys/module/siw/parameters
echo 1 >"$par/zcopy_min"
on_exit "if [[ -w $par/zcopy_min ]]; then echo 0 >$par/zcopy_min; fi"
run ip netns exec h1 tc qdisc add dev veth1 root netem delay 20ms
run ip netns exec h2 tc qdisc add dev veth2 root netem delay 20ms

zc_msgs() { # DEV -> tx_zcopy_msg
	rdma stat show link "$1/1" | grep -oE 'tx_zcopy_msg [0-9]+' |
		awk '{ print $2 }'
}
port=18790
bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 120
wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
bg cli ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n 100000 -S 7 -m 1048576 -t 120
cpid=$BG_PID
zc_going() { (($(zc_msgs "$RDEV1") > 20)); }
wait_for 60 zc_going ||
	{ show cli; show srv; fail "no zero-copy messages went out"; }
info "zero-copy messages sent before the kill: $(zc_msgs "$RDEV1")"
pkill -KILL -f siw_datacheck || true
wait "$cpid" 2>/dev/null || true

t0=$SECONDS ok=0
while ((SECONDS - t0 < 60)); do
	if rmmod siw 2>/dev/null; then ok=1; break; fi
	sleep 0.5
done
((ok)) || fail "siw still loaded 60 s after the kill (refcnt $(cat /sys/module/siw/refcnt 2>/dev/null))"
info "module removed $((SECONDS - t0)) s after the kill"
[[ ! -e /sys/module/siw ]] || fail "siw still present after rmmod"
dmesg_problems_since "$m"

# and it works again
rdev_netns
bg srv2 ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p $((port + 1)) -t 60
wait_log "$TMPD/srv2.log" '^# listening' 20 || { show srv2; fail "datacheck server did not start after reload"; }
ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p $((port + 1)) -n 20 -S 8 -m 65536 -t 60 >"$TMPD/cli2.log" 2>&1 ||
	{ show cli2; show srv2; fail "data-check after reload failed"; }
dmesg_problems_since "$m"
