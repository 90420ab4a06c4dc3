#!/usr/bin/env bash
# rdma link add/delete of siw on lo and on a veth; what rdma, ibv_devices and
# ibv_devinfo report about the device and its port.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo ibv_devices
siw_fresh
siw_load
m=$(dmesg_mark)

check_dev() { # NAME NETDEV
	local d=$1 nd=$2 info v
	rdma link show | grep -qE "^link $d/1 .*netdev $nd( |\$)" || fail "rdma link show: no '$d/1 ... netdev $nd': $(rdma link show)"
	rdma_dev_exists "$d" || fail "rdma dev show lacks $d: $(rdma dev show)"
	rdma dev show "$d" | grep -q 'node_type rnic' || fail "rdma dev show $d: node_type not rnic: $(rdma dev show "$d")"
	[[ $(cat "/sys/class/infiniband/$d/node_type") == *RNIC* ]] || fail "sysfs node_type: $(cat "/sys/class/infiniband/$d/node_type")"
	grep -qx "$d" /sys/class/infiniband_verbs/uverbs*/ibdev 2>/dev/null || fail "no uverbs device for $d"
	ibv_devices | awk '{ print $1 }' | grep -qx "$d" || fail "ibv_devices does not list $d (libsiw did not bind: driver id / ABI version?)"
	info=$(ibv_devinfo -v -d "$d" 2>&1) || fail "ibv_devinfo -v -d $d failed: $info"
	printf '%s\n' "$info" | head -n 30
	# one ibv_devinfo run, parsed many times (each run is slow on the debug kernel)
	attr() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }' <<<"$info"; }
	[[ $(attr transport) == "iWARP (1)" ]] || fail "transport: '$(attr transport)', want 'iWARP (1)'"
	[[ $(attr phys_port_cnt) == 1 ]] || fail "phys_port_cnt: $(attr phys_port_cnt)"
	[[ $(attr link_layer) == Ethernet ]] || fail "link_layer: $(attr link_layer)"
	wait_for 5 test "$(ibdev_port_state "$d")" = PORT_ACTIVE || fail "$d port state $(ibdev_port_state "$d"), want PORT_ACTIVE"
	for v in max_qp max_qp_wr max_cq max_cqe max_mr max_pd max_mr_size; do
		[[ $(attr "$v") =~ ^(0x)?[0-9a-f]+$ && ! $(attr "$v") =~ ^(0x)?0+$ ]] ||
			fail "$v is '$(attr "$v")', want > 0"
	done
}

siw_add siw0 lo
check_dev siw0 lo
run rdma link delete siw0
siw_gone siw0 || fail "siw0 still present after rdma link delete"

# re-add under the same name
siw_add siw0 lo
check_dev siw0 lo
run rdma link delete siw0
siw_gone siw0 || fail "siw0 still present after the second delete"

# a veth end
veth_pair veth1 veth2
siw_add siw1 veth1
check_dev siw1 veth1
run rdma link delete siw1
siw_gone siw1 || fail "siw1 still present after delete"
[[ -z $(rdma_links) ]] || fail "links left: $(rdma_links)"
siw_unload
dmesg_problems_since "$m"
