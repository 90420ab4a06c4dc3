#!/usr/bin/env bash
# ucmatose (stock librdmacm example): 4 connections at once between netns
# h1 (client) and h2 (server) over siw on veth1/veth2, sends both ways.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd ucmatose rdma ss
m=$(dmesg_mark)
rdev_netns
cnt=$(scale 100 10)
for conns in 1 4; do
	srv_cli 250 "ucmatose-$conns" 7471 \
		"ucmatose -b $H2_IP -c $conns -C $cnt -S 1000" \
		"ucmatose -s $H2_IP -c $conns -C $cnt -S 1000"
	((CLI_RC == 0)) || fail "ucmatose client ($conns conns) exited $CLI_RC"
	((SRV_RC == 0)) || fail "ucmatose server ($conns conns) exited $SRV_RC"
	for s in srv cli; do
		grep -q 'test complete' "$TMPD/ucmatose-$conns.$s" || fail "ucmatose $s ($conns conns): no 'test complete'"
		grep -q 'return status 0' "$TMPD/ucmatose-$conns.$s" || fail "ucmatose $s ($conns conns): no 'return status 0'"
	done
	sleep 1 # let the port's TCP state settle before the next listen
done
dmesg_problems_since "$m"
echo "ucmatose passed"
