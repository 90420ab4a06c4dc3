#!/usr/bin/env bash
# MTU changes during a live, byte-verified transfer: siw sizes each FPDU
# from the connection's current TCP MSS (mss_cache, read per FPDU), so
# lowering and raising the MTU of both veth ends while siw_datacheck runs
# (random Send/Write/Read up to 8 MiB, multi-SGE, every buffer compared
# after every operation) changes the FPDU size mid-message. The MTU goes
# 1500 -> 1280 -> 576 -> 88 (the smallest that still carries TCP here:
# MSS 48 after the kernel's tcp_min_snd_mss; siw then sends FPDUs of its
# 256-byte floor over several segments) -> 9000 -> 1500; before each
# change the transfer must have moved more bytes at the previous MTU, the
# device's port MTU must follow each change, and the transfer must still
# run after the last. It ends intact, about 550 MiB on stock (2-4 MiB/s
# under TCG: siw_datacheck verifies every buffer after every operation;
# each MTU step took about 20 s here, hence the size; the debug kernel
# moves less). --full (SIW_TEST_FULL=1): about 1.5 GiB, 13 changes.
# timeout: 900
# timeout-debug: 2700
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns

mtus=(1280 576 88 9000 1500) step=$(scale 4000000 500000) step88=$(scale 250000 100000)
iters=$(scale 900 40) max=$(scale 8388608 1048576) want_mib=$(scale 300 10)
if ((${SIW_TEST_FULL:-0})); then
	mtus=(1280 576 88 9000 1500 576 9000 88 1500 1280 9000 576 1500)
	step=$(scale 16000000 1000000) step88=$(scale 1000000 100000)
	iters=$(scale 2400 120) want_mib=$(scale 800 30)
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

bg srv ip netns exec h2 "$BIN/siw_datacheck" -s -b "$H2_IP" -p "$port" -t 120 -T 2400
spid=$BG_PID
wait_log "$TMPD/srv.log" '^# listening' 20 || { show srv; fail "datacheck server did not start"; }
rx0=$(rx)
t0=$SECONDS
bg cli ip netns exec h1 "$BIN/siw_datacheck" -c "$H2_IP" -p "$port" -n "$iters" -S "$seed" -m "$max" -t 120 -T 2400
cpid=$BG_PID

# MIN_BYTES more than BYTES_BEFORE moved, or the client ended
moved_or_ended() { # BYTES_BEFORE MIN_BYTES
	(($(rx) >= $1 + $2)) || ! kill -0 "$cpid" 2>/dev/null
}
changes=0 prev_mtu=1500 last_rx=$rx0
for mtu in "${mtus[@]}"; do
	# this much at the MTU before (88: a slow MTU)
	need=$step
	((prev_mtu != 88)) || need=$step88
	b=$last_rx
	wait_for 300 moved_or_ended "$b" "$need" || fail "no progress at MTU $prev_mtu: $(($(rx) - b)) bytes in 300 s"
	kill -0 "$cpid" 2>/dev/null || { show cli | tail -n 5; fail "the transfer ended after $changes MTU changes (of ${#mtus[@]}): make it longer"; }
	set_mtu "$mtu"
	info "MTU $prev_mtu -> $mtu after $((($(rx) - rx0) >> 20)) MiB ($((SECONDS - t0)) s)"
	last_rx=$(rx) prev_mtu=$mtu changes=$((changes + 1))
done
kill -0 "$cpid" 2>/dev/null || fail "the transfer ended before the last MTU change took effect under it"
set_mtu 1500
crc=0 src=0
wait_pid "$cpid" 1800 || crc=$?
wait_pid "$spid" 120 || src=$?
moved=$((($(rx) - rx0) >> 20))
info "transfer: $moved MiB received in $((SECONDS - t0)) s, $changes MTU changes"
show cli | tail -n 5
show srv | tail -n 5
((crc == 0)) || fail "datacheck client failed (rc=$crc, seed $seed)"
((src == 0)) || fail "datacheck server failed (rc=$src, seed $seed)"
grep -q "^ok - client: $iters iterations verified" "$TMPD/cli.log" || fail "client did not verify all $iters iterations"
! grep -q mismatch "$TMPD/cli.log" "$TMPD/srv.log" || fail "a completed operation delivered wrong bytes"
((moved >= want_mib)) || fail "only $moved MiB moved, expected >= $want_mib"
dmesg_problems_since "$m"
echo "mtu-change passed: $moved MiB intact across $changes MTU changes (seed $seed)"
