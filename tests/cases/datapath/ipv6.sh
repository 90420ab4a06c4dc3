#!/usr/bin/env bash
# IPv6 between two network namespaces (issue 22): the siw devices on
# veth1/veth2 also carry a ULA (fd00:88::1, ::2) and a link-local address
# (fe80::88:1, ::2, given with its scope id). Over the ULA: rping with
# data validation, a data-check (siw_datacheck: Send, Write, Read with
# random SGLs, every byte checked); over the link-local address: the
# same. While each data-check runs, its TCP connection must be an IPv6
# one (ss). Not perftest: its -R client (4.5, Debian 12) resolves the
# server as IPv4 only ("Address family for hostname not supported for
# fd00:88::2", seen here 2026-12-02).
# timeout: 500
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma rping ss
need_tool siw_datacheck
m=$(dmesg_mark)
rdev_netns
for i in 1 2; do
	# nodad: usable at once (no duplicate address detection to wait for)
	run ip -n "h$i" addr add "fd00:88::$i/64" dev "veth$i" nodad
	run ip -n "h$i" addr add "fe80::88:$i/64" dev "veth$i" nodad
done
wait_for 10 ip netns exec h1 ping -6 -c1 -W1 fd00:88::2 || fail "no IPv6 ping h1 -> fd00:88::2"
wait_for 10 ip netns exec h1 ping -6 -c1 -W1 fe80::88:2%veth1 || fail "no IPv6 ping h1 -> fe80::88:2%veth1"

seed=${SIW_DATACHECK_SEED:-$((RANDOM * 32768 + RANDOM))}
port=19900
# v6_conn PORT: an established IPv6 TCP connection to PORT in h2 (the
# RDMA connection's own, as siw runs over TCP)
v6_conn() {
	ip netns exec h2 ss -Htn6 state established "( sport = :$1 )" | grep -q .
}
# rping_v6 NAME SERVER_ADDR CLIENT_ADDR
rping_v6() {
	local n
	n=$(scale 200 20)
	srv_cli 300 "$1" "$port" \
		"rping -s -a $2 -p $port -v -V -C $n -S 4096" \
		"rping -c -a $3 -p $port -v -V -C $n -S 4096"
	((CLI_RC == 0 && SRV_RC == 0)) || fail "$1: rping client rc=$CLI_RC, server rc=$SRV_RC"
	got=$(grep -oE 'rdma-ping-[0-9]+:' "$TMPD/$1.cli" | sort -u | wc -l)
	((got == n)) || fail "$1: rping client printed $got distinct pings, expected $n"
	port=$((port + 1))
}
# datacheck_v6 NAME SERVER_ADDR CLIENT_ADDR: the client checks, while it
# runs, that its connection is IPv6
datacheck_v6() {
	local rc=0 crc=0 seen=0 cpid
	bg "$1-srv" ip netns exec h2 "$BIN/siw_datacheck" -s -b "$2" -p "$port" -t 60
	local spid=$BG_PID
	wait_log "$TMPD/$1-srv.log" '^# listening' 30 || { show "$1-srv"; fail "$1: datacheck server did not start"; }
	ip netns exec h1 "$BIN/siw_datacheck" -c "$3" -p "$port" -n "$(scale 100 20)" -S "$seed" \
		-m "$(scale 1048576 131072)" -t 60 >"$TMPD/$1-cli.log" 2>&1 &
	cpid=$!
	while kill -0 "$cpid" 2>/dev/null; do
		v6_conn "$port" && seen=1 && break
		sleep 0.2
	done
	wait_pid "$cpid" 300 || crc=$?
	wait_pid "$spid" 60 || rc=$?
	show "$1-cli"; show "$1-srv"
	((crc == 0 && rc == 0)) || fail "$1: datacheck client rc=$crc, server rc=$rc (seed $seed)"
	grep -q '^ok - client' "$TMPD/$1-cli.log" || fail "$1: client printed no summary"
	((seen)) || fail "$1: no established IPv6 TCP connection on port $port while the data-check ran"
	port=$((port + 1))
}

rping_v6 rping-ula fd00:88::2 fd00:88::2
datacheck_v6 datacheck-ula fd00:88::2 fd00:88::2
rping_v6 rping-ll fe80::88:2%veth2 fe80::88:2%veth1
datacheck_v6 datacheck-ll fe80::88:2%veth2 fe80::88:2%veth1

dmesg_problems_since "$m"
echo "ipv6 passed"
