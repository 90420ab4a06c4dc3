#!/usr/bin/env bash
# The peer's last Send must not be lost when its FIN comes in the same
# segment. TCP calls sk_state_change for the FIN before sk_data_ready for
# the segment's data, and the endpoint's work (an unbound queue) may run
# on another CPU in between: it used to unhook the socket and flush the
# receive queue while the Send still sat in TCP, so the receiver saw a
# flushed receive where the sender had seen its Send complete and an
# orderly DISCONNECTED (the soak of 2026-12-05: a receive flushed on the
# server before a BYE whose send had completed).
#
# The window is a few instructions wide; the test-hooks build of the
# module (build/hooks/KVER/siw.ko, -DSIW_TEST_HOOKS, built by tests/run)
# widens it: test_fin_delay_ms holds the softirq after a FIN's state
# change. Each round: siw_zcclose's client (h1) connects, the path h1 ->
# h2 is black-holed, the client posts one small copied Send and
# disconnects; the hole is removed and TCP's retransmission carries the
# Send and the FIN in one segment (checked: a capture on veth2 must show
# a FIN with payload), and the server must receive the Send. A round
# whose FIN came alone (on the debug kernel an early retransmission can
# send the Send first) tests nothing: it is logged as a NOTICE and
# another round runs. The case stops after 3 rounds that set the race
# up, runs at most 6, and fails if none did (each round that did must
# have received its Send).
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip tc tcpdump insmod rmmod modinfo
need_tool siw_zcclose
[[ $SIW_DEV_TYPE == siw ]] || skip "the test-hooks build is this project's siw"
hooks=$SIW_TOP/build/hooks/$(uname -r)/siw.ko
[[ -e $hooks ]] || fail "test-hooks build missing: $hooks (tests/run builds it where this case runs)"
m=$(dmesg_mark)
siw_unload
for d in $(modinfo -F depends "$hooks" | tr ',' ' '); do modprobe "$d" || fail "modprobe $d"; done
insmod "$hooks" || fail "insmod $hooks"
on_exit "rmmod siw"
par=/sys/module/siw/parameters/test_fin_delay_ms
[[ -w $par ]] || fail "the loaded siw has no $par: not the test-hooks build"
echo 30 >"$par"
rdev_netns
want=3 maxrounds=6 size=64 setup=0
ip netns exec h2 tcpdump -i veth2 -nn -l -U "tcp[tcpflags] & tcp-fin != 0 and dst host $H2_IP" \
	>"$TMPD/fins.log" 2>"$TMPD/tcpdump.err" &
tpid=$!
on_exit "kill $tpid"
wait_for 10 grep -q 'listening on' "$TMPD/tcpdump.err" || fail "tcpdump did not start: $(cat "$TMPD/tcpdump.err")"
for r in $(seq "$maxrounds"); do
	port=$((18940 + r))
	rm -f "$TMPD"/go.* "$TMPD/srv.log" "$TMPD/cli.log"
	# connected, then the path h1 -> h2 black-holed (caselib.sh)
	zcclose_start 0 "$port" 1 "$size" 120
	spid=$ZC_SPID cpid=$ZC_CPID
	f0=$(rdma_stat "$RDEV1" tx_fpdu)
	touch "$TMPD/go.post"
	wait_log "$TMPD/cli.log" '^# posted' 30 || { show cli; fail "round $r: the client did not post its Send"; }
	sent() { (($(rdma_stat "$RDEV1" tx_fpdu) > f0)); }
	wait_for 30 sent || { show cli; fail "round $r: the Send never reached TCP"; }
	touch "$TMPD/go.close"
	wait_log "$TMPD/cli.log" '^# disconnecting' 30 || { show cli; fail "round $r: the client did not disconnect"; }
	# the FIN goes to TCP right after the disconnect (siw_cep_do_rdma);
	# both wait in the retransmission queue until the path comes back
	fin_queued() { ip netns exec h1 ss -tn state fin-wait-1 "( dport = :$port )" | grep -q ":$port"; }
	wait_for 30 fin_queued || { ip netns exec h1 ss -tnoi; fail "round $r: the client's socket never reached FIN-WAIT-1"; }
	run ip netns exec h1 tc qdisc del dev veth1 root
	src=0 crc=0
	wait_pid "$spid" 60 || src=$?
	wait_pid "$cpid" 30 || crc=$?
	show srv
	show cli
	((src == 0 && crc == 0)) || fail "round $r: server rc $src, client rc $crc"
	grep -qE '^# sends: ok 1, flushed 0, other 0$' "$TMPD/cli.log" ||
		fail "round $r: the client's Send did not complete: $(grep '^# sends:' "$TMPD/cli.log" || true)"
	# the race was set up: the FIN this server got carried the Send
	fin=$(grep -E "> $H2_IP\.$port: Flags \[F" "$TMPD/fins.log" | tail -n 1)
	info "round $r: FIN at the server: ${fin:-none seen}"
	if ! [[ $fin =~ length\ ([0-9]+) ]] || ((BASH_REMATCH[1] == 0)); then
		notice "round $r: the server's FIN came without the Send (${fin:-no FIN captured}): the race was not set up; another round"
		continue
	fi
	setup=$((setup + 1))
	grep -qE '^# received 1 message\(s\)' "$TMPD/srv.log" ||
		fail "round $r: the Send that came with the FIN was lost: $(grep '^# received' "$TMPD/srv.log" || echo 'no count')"
	((setup < want)) || break
done
((setup > 0)) || fail "in none of $maxrounds rounds did the Send come with the FIN: the race was never set up"
rounds=$r
echo 0 >"$par"
dmesg_problems_since "$m"
echo "fin-with-data passed: $rounds rounds, $setup with the Send in the FIN's segment, each of those Sends received"
