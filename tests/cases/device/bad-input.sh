#!/usr/bin/env bash
# rdma link add must fail cleanly, with a siw dmesg line naming the reason,
# for: a netdev that is not Ethernet/loopback, a duplicate device name, a
# second siw device on the same netdev; and fail for a nonexistent netdev.
# The existing device keeps working after each.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo
siw_fresh
siw_load
m0=$(dmesg_mark)
siw_add siw0 lo
veth_pair veth1 veth2

first_ok() { # WHAT
	[[ $(ibdev_port_state siw0) == PORT_ACTIVE ]] || fail "after $1: siw0 port $(ibdev_port_state siw0)"
	ibv_devinfo -d siw0 >/dev/null 2>&1 || fail "after $1: ibv_devinfo -d siw0 fails"
	rdma link show | grep -qE '^link siw0/1 .*netdev lo( |$)' || fail "after $1: siw0 not on lo"
	[[ $(rdma_links | sort | tr '\n' ' ') == "siw0 " ]] || fail "after $1: links are '$(rdma_links | tr '\n' ' ')', want only siw0"
}
# must_fail WHAT NEED_DMESG NAME NETDEV
must_fail() {
	local what=$1 need=$2 name=$3 nd=$4 m lines
	m=$(dmesg_mark)
	expect_fail rdma link add "$name" type siw netdev "$nd"
	info "$what: rdma said: $EXPECT_OUT"
	lines=$(dmesg_since "$m")
	info "$what: dmesg: $lines"
	if ((need)); then
		grep -q siw <<<"$lines" || fail "$what: no siw line in dmesg naming the reason"
	fi
	[[ $name == siw0 ]] || ! rdma_dev_exists "$name" || fail "$what: device $name exists after failed add"
	first_ok "$what"
}

first_ok "setup"

# 1. netdevs that are not Ethernet or loopback (tunnels: ARPHRD_SIT/TUNNEL/IPGRE)
made=0
try_tunnel() { # NAME TYPE ARPHRD
	ip link add "$1" type "$2" local 127.0.0.1 remote "127.0.0.$((made + 2))" 2>/dev/null || return 0
	on_exit "ip link del $1"
	ip link set "$1" up 2>/dev/null || true
	[[ $(cat "/sys/class/net/$1/type") == "$3" ]] || fail "$1 has type $(cat "/sys/class/net/$1/type"), expected $3"
	made=$((made + 1))
	must_fail "non-Ethernet netdev $1 ($2)" 1 siwbad "$1"
}
try_tunnel siwsit sit 776
try_tunnel siwipip ipip 768
try_tunnel siwgre gre 778
((made > 0)) || fail "could not create any non-Ethernet tunnel netdev (sit/ipip/gre)"

# 2. duplicate device name on another netdev
must_fail "duplicate name siw0 on veth1" 1 siw0 veth1
# 3. second siw device on the same netdev
must_fail "second device on lo" 1 siw1 lo
# 4. nonexistent netdev (rdma core rejects it before the driver is called,
#    so no siw dmesg line is required)
must_fail "nonexistent netdev" 0 siw2 nosuchnetdev0

# failed attempts left nothing behind: veth1 takes a device now
siw_add siw1 veth1
wait_for 5 test "$(ibdev_port_state siw1)" = PORT_ACTIVE || fail "siw1 on veth1 not active"
run rdma link delete siw1
siw_gone siw1 || fail "siw1 not removed"
run rdma link delete siw0
siw_gone siw0 || fail "siw0 not removed"
siw_unload
dmesg_problems_since "$m0"
