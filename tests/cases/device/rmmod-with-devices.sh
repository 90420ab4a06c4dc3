#!/usr/bin/env bash
# rmmod siw while devices exist (not opened by user space) removes them all;
# the module can be loaded and used again.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo
siw_fresh
siw_load
m=$(dmesg_mark)
veth_pair veth1 veth2
siw_add siw0 lo
siw_add siw1 veth1
siw_add siw2 veth2
for d in siw0 siw1 siw2; do
	wait_for 5 test "$(ibdev_port_state $d)" = PORT_ACTIVE || fail "$d not active"
done
out=$(rmmod siw 2>&1) || fail "rmmod siw with 3 devices failed: $out"
[[ ! -e /sys/module/siw ]] || fail "siw still loaded after rmmod"
for d in siw0 siw1 siw2; do
	siw_gone "$d" 5 || fail "$d still present after rmmod"
done
[[ -z $(rdma_links) ]] || fail "links left after rmmod: $(rdma_links)"
# usable again
siw_load
siw_add siw0 lo
wait_for 5 test "$(ibdev_port_state siw0)" = PORT_ACTIVE || fail "siw0 not active after reload"
siw_add siw1 veth1
out=$(rmmod siw 2>&1) || fail "second rmmod failed: $out"
siw_gone siw0 5 || fail "siw0 still present after second rmmod"
siw_gone siw1 5 || fail "siw1 still present after second rmmod"
dmesg_problems_since "$m"
