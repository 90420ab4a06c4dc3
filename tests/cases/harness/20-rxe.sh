#!/usr/bin/env bash
# Harness self-test with the kernel's own soft-RoCE (rdma_rxe): rdma link
# add/show/delete, ibv_devinfo parsing, a small ib_write_bw, and the
# listener waits of lib.sh (tcp_listening, rdma_listening). Proves the
# guest's RDMA user space works.
# timeout: 180
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd rdma ibv_devinfo ibv_devices ib_write_bw
modprobe rdma_rxe || fail "modprobe rdma_rxe failed"
on_exit "rdma link delete rxe0; rdma link delete rxe1; rdma link delete rxe2; rmmod rdma_rxe"

run rdma link add rxe0 type rxe netdev lo
rdma link show | grep -E '^link rxe0/1 .*netdev lo( |$)' || fail "rdma link show lacks rxe0 on lo: $(rdma link show)"
ibv_devices | grep -qw rxe0 || fail "ibv_devices lacks rxe0"
wait_for 10 test "$(ibdev_port_state rxe0)" = PORT_ACTIVE || fail "rxe0 port state $(ibdev_port_state rxe0)"
[[ $(ibdev_attr rxe0 link_layer) == Ethernet ]] || fail "link_layer $(ibdev_attr rxe0 link_layer)"
[[ $(ibdev_attr rxe0 phys_port_cnt) == 1 ]] || fail "phys_port_cnt $(ibdev_attr rxe0 phys_port_cnt)"
[[ $(ibdev_attr rxe0 transport) == InfiniBand* ]] || fail "transport $(ibdev_attr rxe0 transport)"
# ib_write_bw on lo (TCP exchange of QP data; rdma_cm does not route
# 127.0.0.1). A run whose TSC calibration missed is repeated (lib.sh).
srv=$(mktemp)
rxe_lo_bw() { # one server and client (the client retries its connect)
	timeout 120 ib_write_bw -d rxe0 -n 200 -s 4096 >"$srv" 2>&1 &
	local spid=$! try
	ok=0
	# without -R the server takes its peer's QP data on a TCP socket
	wait_for 60 tcp_listening 18515 || { out="server not listening on 18515 after 60 s"; return; }
	for try in 1 2 3; do
		if out=$(timeout 120 ib_write_bw -d rxe0 -n 200 -s 4096 127.0.0.1 2>&1); then
			ok=1
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
		echo "# client try $try failed"
	done
	wait "$spid" || true
	printf '%s\n' "$out"
}
for run in 1 2 3; do
	rxe_lo_bw
	((ok)) && break
	pt_calib_missed "$srv" <(printf '%s\n' "$out") || break
	info "perftest's TSC calibration missed (run $run); repeating"
done
((ok)) || fail "ib_write_bw client failed; server said: $(tail -n 5 "$srv")"
grep -qE '^ *4096 +200 ' <<<"$out" || fail "no result line for 4096 B x 200"

run rdma link delete rxe0
wait_for 5 bash -c '! rdma link show | grep -q "^link rxe0/"' || fail "rxe0 still listed after delete"

# rxe devices on veth ends inside two namespaces
netns_pair
run ip netns exec h1 rdma link add rxe1 type rxe netdev veth1
run ip netns exec h2 rdma link add rxe2 type rxe netdev veth2
wait_for 10 test "$(ibdev_port_state rxe1)" = PORT_ACTIVE || fail "rxe1 not active"
wait_for 10 test "$(ibdev_port_state rxe2)" = PORT_ACTIVE || fail "rxe2 not active"
ip netns exec h1 rdma link show | grep -qE '^link rxe1/1 .*netdev veth1' || fail "rxe1 not on veth1 in h1: $(ip netns exec h1 rdma link show)"

# rdma_listening (lib.sh), which the bench and the rxe runs wait on: false
# before an rdma_cm listener exists, true once rping's server listens
# (rxe's listener is no TCP socket), and the client connects.
# As in the bench: one rxe device in the initial namespace, client and
# server on its address (rxe's UDP socket lives in init_net on 6.1, so
# rdma_cm across the two namespaces above times out)
run ip link add vr1 type veth peer name vr2
on_exit "ip link del vr1"
run ip addr add 10.89.0.1/24 dev vr1
run ip link set vr1 up
run ip link set vr2 up
run rdma link add rxe3 type rxe netdev vr1
on_exit "rdma link delete rxe3"
wait_for 10 test "$(ibdev_port_state rxe3)" = PORT_ACTIVE || fail "rxe3 not active"
port=7180
rdma_listening $port && fail "rdma_listening $port before any listener: $(rdma res show cm_id)"
timeout 60 rping -s -a 10.89.0.1 -p $port -C 3 -v >"$srv" 2>&1 &
spid=$!
wait_for 30 rdma_listening $port || fail "rdma_listening: no listener on $port after 30 s: $(rdma res show cm_id)"
# LISTEN shows a moment before rxe's CM listens (lib.sh): one retry, logged
if ! timeout 60 rping -c -a 10.89.0.1 -p $port -C 3 -v; then
	info "rping client failed right after rdma_listening; retrying once"
	timeout 60 rping -c -a 10.89.0.1 -p $port -C 3 -v || fail "rping over rxe failed after rdma_listening: $(tail -n 3 "$srv")"
fi
wait "$spid" || fail "rping server over rxe failed: $(tail -n 3 "$srv")"
echo "rxe harness checks passed"
