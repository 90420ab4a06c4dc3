#!/usr/bin/env bash
# Port state follows the netdev's carrier / admin state; active_mtu follows
# the netdev MTU.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo
siw_fresh
siw_load
m=$(dmesg_mark)
veth_pair veth1 veth2
run ip link set veth1 mtu 1500
siw_add siw0 veth1
state_is() { [[ $(ibdev_port_state siw0) == "$1" ]]; }
expect_state() { # STATE WHY
	wait_for 5 state_is "$1" || fail "$2: port state $(ibdev_port_state siw0), want $1 within 5 s"
	info "$2: $1"
}
expect_state PORT_ACTIVE "initial"
rdma link show siw0/1 | grep -q 'state ACTIVE' || fail "rdma link show: $(rdma link show siw0/1)"

run ip link set veth2 down   # peer down: veth1 loses carrier
expect_state PORT_DOWN "peer down (no carrier)"
rdma link show siw0/1 | grep -q 'state DOWN' || fail "rdma link show after carrier loss: $(rdma link show siw0/1)"
run ip link set veth2 up
expect_state PORT_ACTIVE "peer up again"

run ip link set veth1 down   # own netdev down
expect_state PORT_DOWN "netdev down"
run ip link set veth1 up
expect_state PORT_ACTIVE "netdev up again"

mtu_is() { [[ $(ibdev_attr siw0 active_mtu) == "$1 "* ]]; }
expect_mtu() { # NETDEV_MTU IB_MTU
	run ip link set veth2 mtu "$1"
	run ip link set veth1 mtu "$1"
	wait_for 5 mtu_is "$2" || fail "netdev mtu $1: active_mtu '$(ibdev_attr siw0 active_mtu)', want $2"
	info "mtu $1 -> active_mtu $(ibdev_attr siw0 active_mtu)"
}
expect_mtu 1500 1024
expect_mtu 9000 4096
expect_mtu 1500 1024
expect_state PORT_ACTIVE "after mtu changes"
run rdma link delete siw0
siw_gone siw0 || fail "siw0 not removed"
siw_unload
dmesg_problems_since "$m"
