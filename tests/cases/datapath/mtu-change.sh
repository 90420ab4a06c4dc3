#!/usr/bin/env bash
# MTU changes during a live, byte-verified transfer: siw sizes each FPDU
# from the connection's current TCP MSS (mss_cache, read per FPDU), so
# lowering and raising the MTU of both veth ends while siw_datacheck runs
# (random Send/Write/Read up to 8 MiB, multi-SGE, every buffer compared
# after every operation) changes the FPDU size mid-message. The MTU goes
# 1500 -> 1280 -> 576 -> 88 (the smallest that still carries TCP here:
# MSS 48 after the kernel's tcp_min_snd_mss; siw then sends FPDUs of its
# 256-byte floor over several segments) -> 9000 -> 1500; before each
# change a transfer still running must have moved more bytes at the
# previous MTU, the device's port MTU must follow each change, and the
# transfer must still move data after the last. Data-check runs follow one
# another (a run that ends before the changes are done is checked and the
# next starts), so the changes never outlast the transfer; every run must
# end with every iteration verified. --full (SIW_TEST_FULL=1): 13 changes.
# timeout: 900
# timeout-debug: 2700
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns

mtus=(1280 576 88 9000 1500) step=$(scale 4000000 500000) step88=$(scale 250000 100000)
iters=$(scale 300 40) max=$(scale 8388608 1048576) want_mib=$(scale 100 10)
if ((${SIW_TEST_FULL:-0})); then
	mtus=(1280 576 88 9000 1500 576 9000 88 1500 1280 9000 576 1500)
	step=$(scale 16000000 1000000) step88=$(scale 1000000 100000)
	want_mib=$(scale 400 30)
fi
seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
port=18620

# ib_mtu_int_to_enum: the largest IB MTU not above the netdev's
ib_mtu() { local v; for v in 4096 2048 1024 512; do ((${1} >= v)) && { echo "$v"; return; }; done; echo 256; }
port_active_mtu() { ibv_devinfo -d "$1" -i 1 | awk '$1 == "active_mtu:" { print $2; exit }'; }
port_mtu_is() { [[ $(port_active_mtu "$1") == "$2" ]]; }
set_mtu() {
	local mtu=$1 i
	for i in 1 2; do
		run ip -n "h$i" link set "veth$i" mtu "$mtu"
		ip -n "h$i" link show "veth$i" | grep -q " mtu $mtu " || fail "veth$i: MTU is not $mtu: $(ip -n "h$i" link show "veth$i")"
	done
	for i in 1 2; do
		wait_for 10 port_mtu_is "${RDEV_PFX}$i" "$(ib_mtu "$mtu")" ||
			fail "${RDEV_PFX}$i: port active_mtu $(port_active_mtu "${RDEV_PFX}$i"), expected $(ib_mtu "$mtu") for MTU $mtu"
	done
}
rx() { echo $(($(rdma_stat "$RDEV1" rx_bytes) + $(rdma_stat "$RDEV2" rx_bytes))); }

# one data-check pair (server in h2, client in h1); a run that ends
# before the MTU changes are done is checked and followed by the next,
# so every change happens under a live transfer however fast it runs
runs=0 cpid='' spid=''
start_pair() {
	runs=$((runs + 1)) port=$((port + 1))
	bg "srv$runs" ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 120 -T 2400
	spid=$BG_PID
	wait_log "$TMPD/srv$runs.log" '^# listening' 20 || { show "srv$runs"; fail "datacheck server $runs did not start"; }
	bg "cli$runs" ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$iters" \
		-S "$((seed + runs))" -m "$max" -t 120 -T 2400
	cpid=$BG_PID
}
# end_pair: the current pair's end and verdict (every iteration verified)
end_pair() {
	local crc=0 src=0
	wait_pid "$cpid" 1800 || crc=$?
	wait_pid "$spid" 120 || src=$?
	show "cli$runs" | tail -n 3
	((crc == 0)) || { show "srv$runs" | tail -n 5; fail "datacheck client $runs failed (rc=$crc, seed $((seed + runs)))"; }
	((src == 0)) || { show "srv$runs" | tail -n 5; fail "datacheck server $runs failed (rc=$src, seed $((seed + runs)))"; }
	grep -q "^ok - client: $iters iterations verified" "$TMPD/cli$runs.log" || fail "client $runs did not verify all $iters iterations"
	! grep -q mismatch "$TMPD/cli$runs.log" "$TMPD/srv$runs.log" || fail "a completed operation of run $runs delivered wrong bytes"
	cpid=''
}
alive() { [[ -n $cpid ]] && kill -0 "$cpid" 2>/dev/null; }
rx0=$(rx)
t0=$SECONDS
start_pair

# MIN_BYTES more than BYTES_BEFORE moved, or the client ended
moved_or_ended() { # BYTES_BEFORE MIN_BYTES
	(($(rx) >= $1 + $2)) || ! alive
}
changes=0 prev_mtu=1500
for mtu in "${mtus[@]}"; do
	# this much at the MTU before (88: a slow MTU), by a transfer that is
	# still running when the MTU changes
	need=$step
	((prev_mtu != 88)) || need=$step88
	while :; do
		if ! alive; then
			end_pair
			start_pair
		fi
		b=$(rx)
		wait_for 300 moved_or_ended "$b" "$need" || fail "no progress at MTU $prev_mtu: $(($(rx) - b)) bytes in 300 s"
		alive && break
	done
	set_mtu "$mtu"
	info "MTU $prev_mtu -> $mtu under run $runs after $((($(rx) - rx0) >> 20)) MiB ($((SECONDS - t0)) s)"
	prev_mtu=$mtu changes=$((changes + 1))
done
# the last change under a transfer that goes on moving at the new MTU
b=$(rx)
wait_for 300 moved_or_ended "$b" "$step" || fail "no progress at MTU $prev_mtu: $(($(rx) - b)) bytes in 300 s"
set_mtu 1500
end_pair
moved=$((($(rx) - rx0) >> 20))
info "transfer: $moved MiB received in $((SECONDS - t0)) s, $changes MTU changes, $runs data-check run(s)"
((moved >= want_mib)) || fail "only $moved MiB moved, expected >= $want_mib"
dmesg_problems_since "$m"
echo "mtu-change passed: $moved MiB intact across $changes MTU changes in $runs run(s) (seed $seed)"
