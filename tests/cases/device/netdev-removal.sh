#!/usr/bin/env bash
# Removing the netdev under a siw device removes the device (veth deleted,
# or its network namespace deleted); other devices are untouched.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo
siw_fresh
siw_load
m=$(dmesg_mark)
siw_add siw0 lo
veth_pair veth1 veth2
siw_add siw1 veth1
wait_for 5 test "$(ibdev_port_state siw1)" = PORT_ACTIVE || fail "siw1 not active"
run ip link del veth1
siw_gone siw1 || fail "siw1 still present after its netdev was deleted: $(rdma link show)"
info "siw1 gone with veth1"

# netdev inside a namespace that is deleted
netns_pair
run ip netns exec h1 rdma link add siw2 type siw netdev veth1
rdma_dev_exists siw2 || fail "siw2 not created in netns h1"
run ip netns del h1
siw_gone siw2 20 || fail "siw2 still present after netns h1 was deleted: $(rdma dev show)"
info "siw2 gone with netns h1"

[[ $(ibdev_port_state siw0) == PORT_ACTIVE ]] || fail "siw0 on lo affected: $(ibdev_port_state siw0)"
run rdma link delete siw0
siw_gone siw0 || fail "siw0 not removed"
siw_unload
dmesg_problems_since "$m"
