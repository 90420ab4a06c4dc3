#!/usr/bin/env bash
# Connection flood (issue 21, defect 5): a peer opens thousands of TCP
# connections to one iWARP listener and never sends an MPA request. Per
# listener, the connections waiting for their MPA request are capped at
# the listen backlog, at least 64 (siw(7), SECURITY; a reset is final
# for a peer, unlike a dropped SYN, so a burst of real connects needs
# room); siw_cmtest listens with rdma_listen(id, 8), so the cap is 64;
# connections over the cap are refused at once and counted in the
# device's conn_refused counter, with a rate-limited kernel line naming
# the device and the listener. Meanwhile other connection work goes on.
#  setup: netns h1/h2 (siw1/siw2) and, as another namespace, h3/h4
#    (siw3/siw4 on their own veth pair); the flooded listener is
#    siw_cmtest on 10.88.0.2:19700 (siw2).
#  before: an rping (-C 10, 1 KiB, -V) to another listener on siw2
#    (h1 -> h2) and one between siw3 and siw4 (h3 -> h4), timed;
#  flood: siw_connflood from h1, N connections (2000; 300 on the debug
#    kernel) over about 20 s, held open, bounded in time (it stops by
#    itself); while it runs the same two rpings must complete, each
#    within 3x its time before the flood + 2 s;
#  the cap: the established TCP connections on the flooded port, counted
#    on the listener's side (ss, every 0.5 s), stay <= the cap (64) + the
#    listening socket's accept queue (backlog + 1 = 9) + 4;
#  after: conn_refused > 0 on siw2, the kernel line (rate-limited: fewer
#    lines than refusals), the flooded port drains to no connection, a
#    real connection to the flooded listener is made, nothing of the
#    test is left in rdma res and siw2 can be deleted.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rping rdma ss
need_tool siw_connflood siw_cmtest
[[ $SIW_DEV_TYPE == siw ]] || skip "the endpoint cap and conn_refused are this project's siw"
m=$(dmesg_mark)
rdev_netns
H4_IP=10.87.0.2 # h3 has 10.87.0.1
RDEV3=${RDEV_PFX}3 RDEV4=${RDEV_PFX}4
BACKLOG=8 CAP_MIN=64 MARGIN=4
P_FLOOD=19700
N=$(scale 2000 300)
RATE=$((N / 20))

# the other namespace pair, with its own veth pair and devices
ip netns del h3 2>/dev/null || true
ip netns del h4 2>/dev/null || true
run ip netns add h3
run ip netns add h4
on_exit "ip netns del h3; ip netns del h4"
run ip link add veth3 netns h3 type veth peer name veth4 netns h4
for i in 3 4; do
	run ip -n "h$i" link set lo up
	run ip -n "h$i" addr add "10.87.0.$((i - 2))/24" dev "veth$i"
	run ip -n "h$i" link set "veth$i" up
done
wait_for 10 ip netns exec h3 ping -c1 -W1 "$H4_IP" || fail "no ping h3 -> h4"
rdev_add "$RDEV3" veth3 h3
rdev_add "$RDEV4" veth4 h4

# rping_timed NAME SRV_NS CLI_NS IP PORT: one rping -C 10 with data
# check; its wall time in ms in RPING_MS; fails the case if it fails
rping_timed() {
	local name=$1 sns=$2 cns=$3 ip=$4 p=$5 t0 rc=0 got
	timeout 120 ip netns exec "$sns" rping -s -a "$ip" -p "$p" -C 10 -S 1024 -V -v >"$TMPD/$name.srv" 2>&1 &
	local spid=$!
	on_exit "kill $spid"
	wait_listen "$sns" "$p"
	t0=${EPOCHREALTIME/./}
	timeout 120 ip netns exec "$cns" rping -c -a "$ip" -p "$p" -C 10 -S 1024 -V -v >"$TMPD/$name.cli" 2>&1 || rc=$?
	RPING_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
	wait_pid "$spid" 60 || true
	got=$(grep -oE 'rdma-ping-[0-9]+:' "$TMPD/$name.cli" | sort -u | wc -l)
	if ((rc != 0 || got != 10)); then
		sed "s/^/[$name cli] /" "$TMPD/$name.cli" | tail -n 20
		sed "s/^/[$name srv] /" "$TMPD/$name.srv" | tail -n 20
		fail "$name: rping exited $rc after $RPING_MS ms with $got of 10 pings"
	fi
	info "$name: 10 pings in $RPING_MS ms"
}

# the flooded listener (backlog 8)
bg listener ip netns exec h2 "$BIN/siw_cmtest" listen -n 1 -t 900 "$H2_IP:$P_FLOOD"
LPID=$BG_PID
wait_log "$TMPD/listener.log" '^# listening' "$(scale 60 300)" || { show listener; fail "siw_cmtest did not listen"; }

rping_timed same-before h2 h1 "$H2_IP" 19701
base_same=$RPING_MS
rping_timed netns-before h4 h3 "$H4_IP" 19702
base_netns=$RPING_MS

# the flood; the server side's established connections sampled meanwhile
stop=$TMPD/flood.stop
bg flood ip netns exec h1 "$BIN/siw_connflood" -c "$H2_IP:$P_FLOOD" -n "$N" -r "$RATE" -T 3 -t "$(scale 150 600)" -w "$stop"
FPID=$BG_PID
on_exit "touch $stop"
sampler() {
	while [[ ! -e $stop ]]; do
		ip netns exec h2 ss -Htn state established "( sport = :$P_FLOOD )" | wc -l
		sleep 0.5
	done >"$TMPD/samples"
}
sampler &
SPID=$!
on_exit "kill $SPID"
# the rpings once a fifth of the flood is out
# shellcheck disable=SC2016 # awk's own $3
wait_for 120 awk -v n="$((N / 5))" '/^# t=/ { split($3, a, "="); if (a[2] + 0 >= n) f = 1 } END { exit !f }' "$TMPD/flood.log" ||
	{ show flood; fail "the flood did not get to $((N / 5)) connections in 120 s"; }
info "flood under way: $(grep '^# t=' "$TMPD/flood.log" | tail -n 1)"
problems=()
rping_timed same-during h2 h1 "$H2_IP" 19703
((RPING_MS <= 3 * base_same + 2000)) ||
	problems+=("rping to another listener on $RDEV2 took $RPING_MS ms during the flood, $base_same ms before (limit 3x + 2 s)")
rping_timed netns-during h4 h3 "$H4_IP" 19704
((RPING_MS <= 3 * base_netns + 2000)) ||
	problems+=("rping in another namespace took $RPING_MS ms during the flood, $base_netns ms before (limit 3x + 2 s)")
info "rpings done at: $(grep '^# t=' "$TMPD/flood.log" | tail -n 1)"
grep -q '^# flood done' "$TMPD/flood.log" ||
	info "the rpings finished before the flood's last connection (as meant)"
wait_log "$TMPD/flood.log" '^# flood done' "$(scale 150 600)" || { show flood; fail "the flood did not finish"; }
grep '^# flood done' "$TMPD/flood.log"
refused=$(rdma_stat "$RDEV2" conn_refused || true)
touch "$stop"
wait_pid "$FPID" 60 || { show flood; fail "siw_connflood did not stop"; }
wait "$SPID" 2>/dev/null || true
grep '^result' "$TMPD/flood.log" || { show flood; fail "no result line from siw_connflood"; }
max_est=$(sort -n "$TMPD/samples" | tail -n 1)
info "established connections on the flooded port (listener side): max ${max_est:-none} in $(wc -l <"$TMPD/samples") samples"

# the cap and the counter
cap=$((BACKLOG > CAP_MIN ? BACKLOG : CAP_MIN))
bound=$((cap + BACKLOG + 1 + MARGIN))
[[ -n $max_est ]] || problems+=("no sample of the flooded port's connections")
((${max_est:-0} <= bound)) ||
	problems+=("$max_est connections established on the flooded listener's port at once, more than the cap $cap (backlog $BACKLOG, at least $CAP_MIN) + accept queue $((BACKLOG + 1)) + $MARGIN")
if [[ -z $refused ]]; then
	problems+=("no conn_refused counter on $RDEV2: $(rdma stat show link "$RDEV2/1" | tr '\n' ' ')")
elif ((refused == 0)); then
	problems+=("conn_refused is 0 on $RDEV2 after $N connections to a listener with backlog $BACKLOG")
else
	info "$RDEV2 conn_refused $refused"
	lines=$(dmesg_since "$m" | grep -E "$RDEV2" | grep -cE "$H2_IP:$P_FLOOD\b" || true)
	((lines > 0)) || problems+=("no kernel line naming $RDEV2 and the listener $H2_IP:$P_FLOOD")
	((refused < 50 || lines < refused)) ||
		problems+=("$lines kernel lines for $refused refusals: not rate-limited")
fi

# after the flood: released, the listener still serves
wait_for "$(scale 40 120)" sh -c "[ \$(ip netns exec h2 ss -Htn state established '( sport = :$P_FLOOD )' | wc -l) = 0 ]" ||
	problems+=("connections on the flooded port left after the flood: $(ip netns exec h2 ss -Htn state established "( sport = :$P_FLOOD )" | wc -l)")
if ip netns exec h1 timeout 60 "$BIN/siw_cmtest" connect -e established "$H2_IP:$P_FLOOD" >"$TMPD/after.log" 2>&1; then
	info "a connection to the flooded listener after the flood: established"
else
	show after
	problems+=("no connection to the flooded listener after the flood")
fi
wait_pid "$LPID" 60 || { show listener; problems+=("the flooded listener did not end cleanly"); }
left=$(res_left "comm (rping|siw_cmtest)" cm_id)
[[ -z $left ]] || problems+=("cm_ids left: $left")
left=$(res_left "comm (rping|siw_cmtest)" qp)
[[ -z $left ]] || problems+=("QPs left: $left")
rdma link delete "$RDEV2" || problems+=("rdma link delete $RDEV2 failed")
siw_gone "$RDEV2" 30 || problems+=("$RDEV2 not gone 30 s after rdma link delete")
dmesg_since "$m" | grep -E "$RDEV2|$RDEV3|$RDEV4" | tail -n 15 || true
dmesg_problems_since "$m"
if ((${#problems[@]})); then
	printf 'problem: %s\n' "${problems[@]}" >&2
	fail "${problems[0]}"
fi
echo "connection flood: capped at the backlog, counted, other connections unhindered"
