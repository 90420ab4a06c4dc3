#!/usr/bin/env bash
# Connection setup and teardown of other devices during a handshake
# flood: a peer connects to one listener as fast as it can and never
# sends an MPA request: the first BACKLOG (1024) wait for it until
# mpa_timeout_ms, every one after them is accepted and refused (reset).
# The listener state is global (one mutex for every device and
# namespace): the flooded listener's accepts, with a full accept queue
# behind them, must not hold up the connection requests and the passive
# closes of the others.
#  setup: netns h1/h2 (siw1/siw2) and, as another namespace, h3/h4
#    (siw3/siw4 on their own veth pair); the flooded listener is
#    siw_cmtest on 10.88.0.2:19710 (siw2), backlog 1024.
#  before: siw_cmrate rate -n M from h3 to a siw_cmtest listener in h4
#    (connect, wait for ESTABLISHED, disconnect, destroy QP, CQ and id,
#    one after the other), each connection's step times recorded; one
#    rping -C 10 -V (data moved and checked) h3 -> h4.
#  flood: siw_connflood from h1 to the flooded listener, as fast as it
#    can (256 connects in flight), bounded in time; measured once siw2
#    has refused 500 connections;
#  during: the same cmrate run and rping; siw2's refusals over the run
#    give the flood's rate;
#  assert: median connect time (rdma_connect to ESTABLISHED) and median
#    teardown time (rdma_disconnect to id destroyed) during the flood are
#    each at most 2x their median before it (+ 2 ms, the clock's grain
#    under TCG); the rpings pass; the flood refused at least 100 a second.
# timeout: 600
# timeout-debug: 1800
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rping rdma
need_tool siw_connflood siw_cmtest siw_cmrate
[[ $SIW_DEV_TYPE == siw ]] || skip "conn_refused and the listener cap are this project's siw"
m=$(dmesg_mark)
rdev_netns
H4_IP=10.87.0.2 # h3 has 10.87.0.1
RDEV3=${RDEV_PFX}3 RDEV4=${RDEV_PFX}4
P_FLOOD=19710
BACKLOG=1024
M=$(scale 40 15)
MIN_RATE=$(scale 100 20)

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

# median FILE COL_A COL_B: median of (COL_B - COL_A) in ms over the lines
median() {
	awk -v a="$2" -v b="$3" '{ print ($b - $a) * 1000 }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.2f\n", v[int((NR + 1) / 2)]; else print "none" }'
}

# cm_times NAME PORT: M connections h3 -> h4, one after the other; sets
# CONN_MS and DOWN_MS (medians)
cm_times() {
	local name=$1 p=$2
	bg "$name-srv" ip netns exec h4 "$BIN/siw_cmtest" listen -n "$M" -t "$(scale 300 900)" "$H4_IP:$p"
	local spid=$BG_PID
	wait_log "$TMPD/$name-srv.log" '^# listening' "$(scale 60 300)" || { show "$name-srv"; fail "$name: siw_cmtest did not listen"; }
	ip netns exec h3 timeout "$(scale 300 900)" "$BIN/siw_cmrate" rate -n "$M" -T "$TMPD/$name.t" "$H4_IP:$p" >"$TMPD/$name.log" 2>&1 ||
		{ show "$name"; show "$name-srv"; fail "$name: siw_cmrate failed"; }
	wait_pid "$spid" 60 || { show "$name-srv"; fail "$name: the listener did not end cleanly"; }
	[[ $(wc -l <"$TMPD/$name.t") == "$M" ]] || fail "$name: $(wc -l <"$TMPD/$name.t") of $M connections timed"
	# "A I T0..T7": T_QP $5, T_ESTAB $7, T_DISC_CALL $8, T_DESTROYED $10
	CONN_MS=$(median "$TMPD/$name.t" 5 7)
	DOWN_MS=$(median "$TMPD/$name.t" 8 10)
	info "$name: $M connections, median connect $CONN_MS ms, teardown $DOWN_MS ms ($(cat "$TMPD/$name.log"))"
}

# rping_ok NAME PORT: one rping -C 10 with data check h3 -> h4
rping_ok() {
	local name=$1 p=$2 rc=0 got
	timeout 120 ip netns exec h4 rping -s -a "$H4_IP" -p "$p" -C 10 -S 1024 -V -v >"$TMPD/$name.srv" 2>&1 &
	local spid=$!
	on_exit "kill $spid"
	wait_listen h4 "$p"
	timeout 120 ip netns exec h3 rping -c -a "$H4_IP" -p "$p" -C 10 -S 1024 -V -v >"$TMPD/$name.cli" 2>&1 || rc=$?
	wait_pid "$spid" 60 || true
	got=$(grep -oE 'rdma-ping-[0-9]+:' "$TMPD/$name.cli" | sort -u | wc -l)
	if ((rc != 0 || got != 10)); then
		sed "s/^/[$name cli] /" "$TMPD/$name.cli" | tail -n 20
		fail "$name: rping exited $rc with $got of 10 pings"
	fi
	info "$name: 10 pings checked"
}

bg listener ip netns exec h2 "$BIN/siw_cmtest" listen -n 1 -t 900 -b "$BACKLOG" "$H2_IP:$P_FLOOD"
LPID=$BG_PID
wait_log "$TMPD/listener.log" '^# listening' "$(scale 60 300)" || { show listener; fail "siw_cmtest did not listen"; }

# a warm-up run: the first connections of a boot pay for cold caches
cm_times warmup 19711
cm_times before 19712
base_conn=$CONN_MS base_down=$DOWN_MS
rping_ok rping-before 19713

stop=$TMPD/flood.stop
on_exit "touch $stop"
bg flood ip netns exec h1 "$BIN/siw_connflood" -c "$H2_IP:$P_FLOOD" -n 200000 -p 256 -T 1 -t "$(scale 300 900)" -w "$stop"
FPID=$BG_PID
refused() { rdma_stat "$RDEV2" conn_refused || echo 0; }
wait_for "$(scale 60 300)" sh -c "[ \$(rdma stat show link $RDEV2/1 | grep -oE 'conn_refused [0-9]+' | awk '{ print \$2 }') -ge 500 ]" ||
	{ show flood | tail -n 5; fail "the flood did not get 500 connections refused on $RDEV2 (conn_refused $(refused))"; }
r0=$(refused) t0=${EPOCHREALTIME/./}
cm_times during 19714
r1=$(refused) t1=${EPOCHREALTIME/./}
rping_ok rping-during 19715
touch "$stop"
wait_pid "$FPID" 60 || { show flood; fail "siw_connflood did not stop"; }
grep '^result' "$TMPD/flood.log" || { show flood; fail "no result line from siw_connflood"; }
rate=$(((r1 - r0) * 1000000 / (t1 - t0 + 1)))
info "the flood: $((r1 - r0)) refused on $RDEV2 during the measured run, $rate a second"

problems=()
((rate >= MIN_RATE)) || problems+=("the flood refused only $rate connections a second (at least $MIN_RATE needed for a meaningful run)")
# ok_2x WHAT DURING BEFORE
ok_2x() {
	awk -v d="$2" -v b="$3" 'BEGIN { exit !(d <= 2 * b + 2) }' ||
		problems+=("median $1 of $RDEV3 -> $RDEV4 during the flood on $RDEV2: $2 ms, $3 ms before it (limit 2x + 2 ms)")
	info "$1: $2 ms during the flood, $3 ms before ($(awk -v d="$2" -v b="$3" 'BEGIN { printf "%.2fx", d / b }'))"
}
ok_2x connect "$CONN_MS" "$base_conn"
ok_2x teardown "$DOWN_MS" "$base_down"

wait_pid "$LPID" 5 >/dev/null 2>&1 || true
left=$(rdma res show qp 2>/dev/null | grep -E "comm (rping|siw_cmtest|siw_cmrate)" || true)
[[ -z $left ]] || problems+=("QPs left: $left")
dmesg_problems_since "$m"
if ((${#problems[@]})); then
	printf 'problem: %s\n' "${problems[@]}" >&2
	fail "${problems[0]}"
fi
echo "handshake flood on $RDEV2: connect and teardown of $RDEV3 -> $RDEV4 within 2x"
