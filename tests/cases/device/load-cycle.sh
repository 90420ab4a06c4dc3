#!/usr/bin/env bash
# 20 x (modprobe, add a device, use it, delete it, rmmod): nothing leaks
# (kmemleak on the debug kernel), nothing left behind. The debug kernel runs
# 8 cycles (each takes ~6 s under KASAN and TCG; leaks show in any one).
# timeout: 300
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo
siw_fresh
m=$(dmesg_mark)
n=20
is_debug_kernel && n=8
n=${SIW_LOAD_CYCLES:-$n}
[[ $n =~ ^[1-9][0-9]*$ ]] || fail "SIW_LOAD_CYCLES=$n: at least one cycle must run"
for i in $(seq "$n"); do
	out=$(modprobe siw 2>&1) || fail "cycle $i: modprobe: $out"
	siw_is_ours || fail "cycle $i: loaded siw is not ours"
	out=$(rdma link add siw0 type siw netdev lo 2>&1) || fail "cycle $i: rdma link add: $out"
	wait_for 5 test "$(ibdev_port_state siw0)" = PORT_ACTIVE || fail "cycle $i: port $(ibdev_port_state siw0)"
	ibv_devinfo -v -d siw0 >/dev/null 2>&1 || fail "cycle $i: ibv_devinfo failed"
	out=$(rdma link delete siw0 2>&1) || fail "cycle $i: rdma link delete: $out"
	siw_gone siw0 5 || fail "cycle $i: siw0 not removed"
	siw_unload
done
info "$n cycles done"
out=$(rdma link show 2>&1)
[[ -z $out ]] || fail "rdma link shows leftovers: $out"
[[ -z $(ls /sys/class/infiniband 2>/dev/null) ]] || fail "leftover ib devices: $(ls /sys/class/infiniband)"
if is_debug_kernel; then
	kmemleak_scan_check || fail "kmemleak after $n load cycles: $KMEMLEAK_WHY"
fi
dmesg_problems_since "$m"
