#!/usr/bin/env bash
# Listeners and connection setup (siw_cmtest over rdma_cm), netns h1
# (client) -> h2 (server, addresses 10.88.0.2 and a second one, 10.88.0.12,
# on veth2):
#  1. a wildcard listener takes connections to both addresses
#  2. two listeners on one port, one per address: each request reaches the
#     listener of the address it was sent to
#  3. a listener on one address refuses connections to the other
#  4. reject with private data: the client sees REJECTED and the data
#  5. no listener on the port: the connect fails at once
#  6. a plain TCP server that accepts and says nothing: the connect fails
#     after mpa_timeout_ms (set to 2000 here), not before
#  7. a TCP server that answers garbage: the connect fails at once
# Afterwards no QP or cm_id of the test is left.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip ss busybox
need_tool siw_cmtest
[[ $SIW_DEV_TYPE == siw ]] || skip "listener semantics are checked for siw only"
m=$(dmesg_mark)
rdev_netns
H2_IP2=10.88.0.12
ip netns exec h2 ip addr add "$H2_IP2/24" dev veth2 || fail "second address on veth2"
wait_for 10 ip netns exec h1 ping -c1 -W1 "$H2_IP2" || fail "$H2_IP2 unreachable from h1"
CT=$BIN/siw_cmtest
par=/sys/module/siw/parameters

srv() { # NAME ARGS... : siw_cmtest listen in h2, wait until it listens
	local name=$1; shift
	bg "$name" ip netns exec h2 "$CT" listen "$@"
	SRV_PID=$BG_PID
	wait_log "$TMPD/$name.log" '^# listening' 20 || { show "$name"; fail "$name: server did not start"; }
}
cli() { # NAME ARGS... : siw_cmtest connect in h1; output in $TMPD/NAME.log
	local name=$1; shift
	ip netns exec h1 timeout 60 "$CT" connect "$@" >"$TMPD/$name.log" 2>&1
}
srv_done() { # NAME
	wait_pid "$SRV_PID" 60 || { show "$1"; fail "$1: server failed"; }
	show "$1"
}
elapsed_ms() { sed -n 's/^# outcome .* after \([0-9]*\) ms$/\1/p' "$TMPD/$1.log"; }

# 1. wildcard
srv wild -n 2 -t 60 "0.0.0.0:19601"
cli wild-a -e established "$H2_IP:19601" || { show wild-a; fail "wildcard listener: connect to $H2_IP"; }
cli wild-b -e established "$H2_IP2:19601" || { show wild-b; fail "wildcard listener: connect to $H2_IP2"; }
srv_done wild
[[ $(grep -c '^request on listener 0 ' "$TMPD/wild.log") == 2 ]] || fail "wildcard listener did not get both requests"
echo "ok - wildcard listener takes both addresses"

# 2. two listeners on one port, one per address
srv two -n 2 -t 60 "$H2_IP:19602" "$H2_IP2:19602"
cli two-a -e established "$H2_IP:19602" || { show two-a; fail "two listeners: connect to $H2_IP"; }
cli two-b -e established "$H2_IP2:19602" || { show two-b; fail "two listeners: connect to $H2_IP2"; }
srv_done two
grep -q "^request on listener 0 ($H2_IP:19602)" "$TMPD/two.log" || fail "request to $H2_IP did not reach its listener"
grep -q "^request on listener 1 ($H2_IP2:19602)" "$TMPD/two.log" || fail "request to $H2_IP2 did not reach its listener"
echo "ok - two listeners, each request to its own"

# 3. a specific listener refuses the other address
srv spec -n 1 -t 60 "$H2_IP:19603"
cli spec-other -e failed "$H2_IP2:19603" || { show spec-other; fail "connect to the unlistened address did not fail"; }
ms=$(elapsed_ms spec-other)
((ms < 5000)) || fail "refusal took $ms ms"
cli spec-own -e established "$H2_IP:19603" || { show spec-own; fail "connect to the listened address"; }
srv_done spec
echo "ok - a specific listener refuses other addresses ($ms ms)"

# 4. reject with private data
pdata=siw-cmtest-reject-4711
srv rej -n 1 -t 60 -m reject -P "$pdata" "$H2_IP:19604"
cli rej-c -e rejected -P "$pdata" "$H2_IP:19604" || { show rej-c; fail "reject with private data"; }
srv_done rej
show rej-c
echo "ok - reject with private data reaches the client"

# 5. no listener
cli none -e failed "$H2_IP:19605" || { show none; fail "connect to a port without listener did not fail"; }
ms=$(elapsed_ms none)
((ms < 5000)) || fail "connect to a port without listener took $ms ms to fail"
echo "ok - no listener: failed after $ms ms"

# 6. silent TCP server: MPA timeout
old_to=$(cat "$par/mpa_timeout_ms")
echo 2000 >"$par/mpa_timeout_ms"
on_exit "echo $old_to >$par/mpa_timeout_ms"
bg silent ip netns exec h2 sh -c 'sleep 40 | busybox nc -l -p 19606'
wait_listen h2 19606
cli silent-c -e failed -t 40 "$H2_IP:19606" || { show silent-c; fail "silent peer: connect did not fail"; }
ms=$(elapsed_ms silent-c)
((ms >= 1800 && ms < 15000)) || fail "silent peer: failed after $ms ms, want ~2000 (mpa_timeout_ms)"
echo "ok - silent peer: failed after $ms ms (mpa_timeout_ms 2000)"
echo "$old_to" >"$par/mpa_timeout_ms"

# 7. garbage answer
bg garbage ip netns exec h2 sh -c \
	'{ printf "HTTP/1.0 400 Bad Request\r\nServer: not-iwarp\r\n\r\n"; sleep 20; } | busybox nc -l -p 19607'
wait_listen h2 19607
cli garbage-c -e failed -t 30 "$H2_IP:19607" || { show garbage-c; fail "garbage answer: connect did not fail"; }
ms=$(elapsed_ms garbage-c)
((ms < 5000)) || fail "garbage answer: failed after $ms ms"
echo "ok - garbage answer: failed after $ms ms"

# nothing left behind (released asynchronously: poll). A failing rdma res
# show fails the case: it must not read as "nothing left".
res_left() { # TYPE: the siw_cmtest objects of TYPE; 2 if rdma res show fails
	local out
	out=$(rdma res show "$1" 2>&1) || { echo "rdma res show $1 failed: $out" >"$TMPD/res.err"; return 2; }
	grep -E "comm siw_cmtest" <<<"$out" || true
}
none_left() { local l; rm -f "$TMPD/res.err"; l=$(res_left "$1") && [[ -z $l ]]; }
for t in qp cm_id; do
	if ! wait_for 10 none_left "$t"; then
		[[ -e $TMPD/res.err ]] && fail "$(<"$TMPD/res.err")"
		fail "${t}s left: $(res_left "$t")"
	fi
done
dmesg_problems_since "$m"
dmesg_since "$m" | grep -E "siw[12]:" | tail -n 12
echo "listener tests passed"
