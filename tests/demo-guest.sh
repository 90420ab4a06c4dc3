#!/usr/bin/env bash
# shellcheck disable=SC2119
# Guest part of scripts/demo.sh (runs inside the VM as root).
source "$(dirname "$0")/lib/lib.sh"
trap - ERR
siw_load
echo "== siw loaded: $(modinfo -n siw)"
netns_pair
ip netns exec h1 rdma link add siw0 type siw netdev veth1
ip netns exec h2 rdma link add siw1 type siw netdev veth2
wait_for 5 test "$(ibdev_port_state siw0)" = PORT_ACTIVE || echo "warning: siw0 port $(ibdev_port_state siw0)"
echo "== rdma link show (netns h1)"
ip netns exec h1 rdma link show
echo "== rdma link show (netns h2)"
ip netns exec h2 rdma link show
echo "== ibv_devinfo -v -d siw0"
ibv_devinfo -v -d siw0

# ---------------------------------------------------------------------------
# Traffic: rping and ib_write_bw between the two namespaces
# (h1 10.88.0.1 / siw0  <->  h2 10.88.0.2 / siw1), over rdma_cm.
# ---------------------------------------------------------------------------
demo_traffic() {
	local rc=0
	echo "== rping h1 -> h2 (10 x 1000 B, verbose)"
	ip netns exec h2 timeout 60 rping -s -a 10.88.0.2 -C 10 -S 1000 >/tmp/rping-server.out 2>&1 &
	wait_for 30 sh -c 'ip netns exec h2 ss -ltn | grep -q ":7174 "' || true
	ip netns exec h1 timeout 60 rping -c -a 10.88.0.2 -C 10 -S 1000 -v >/tmp/rping-client.out 2>&1 || rc=$?
	wait || true
	cut -c1-100 /tmp/rping-client.out | tail -n 3
	((rc == 0)) || { echo "demo: rping failed (rc=$rc)"; return 1; }
	echo "== ib_write_bw h1 -> h2 (64 KiB x 200, rdma_cm)"
	local run
	for run in 1 2 3; do
		rc=0
		ip netns exec h2 timeout 120 ib_write_bw -d siw1 -R -s 65536 -n 200 >/tmp/bw-server.out 2>&1 &
		# rdma_cm listens on a real TCP port (perftest's default)
		wait_for 30 tcp_listening 18515 h2 || true
		ip netns exec h1 timeout 120 ib_write_bw -d siw0 -R -s 65536 -n 200 10.88.0.2 2>&1 |
			tee /tmp/bw-client.out || rc=$?
		wait || true
		if ((rc == 0)) || ! pt_calib_missed /tmp/bw-client.out; then break; fi
		echo "(run $run: perftest's TSC calibration missed, so it printed no figures; once more)"
	done
	((rc == 0)) || { echo "demo: ib_write_bw failed (rc=$rc)"; return 1; }
	echo "== counters of siw0"
	rdma stat show link siw0/1
}
demo_rc=0
if [[ ${SIW_DEMO_TRAFFIC:-1} == 1 ]]; then
	demo_traffic || demo_rc=1
fi
# --------------------------- end of traffic hook ---------------------------

ip netns exec h1 rdma link delete siw0 || true
ip netns exec h2 rdma link delete siw1 || true
siw_unload
echo "== demo done"
exit "$demo_rc"
