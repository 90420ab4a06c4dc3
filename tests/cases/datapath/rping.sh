#!/usr/bin/env bash
# rping (stock librdmacm example) between netns h1 (client) and h2
# (server) over siw devices on veth1/veth2, message sizes 64..60000 (rping allows < 64 KiB),
# with data validation (-V). Counts scaled down on the debug kernel.
# timeout: 500
# timeout-debug: 1500
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rping rdma ss
m=$(dmesg_mark)
rdev_netns
n=$(scale 1000 50)
port=7174
for size in 64 1024 4096 60000; do
	c=$n
	((size == 60000)) && c=$(scale 200 10)
	srv_cli 400 "rping-$size" "$port" \
		"rping -s -a $H2_IP -p $port -v -V -C $c -S $size" \
		"rping -c -a $H2_IP -p $port -v -V -C $c -S $size"
	((CLI_RC == 0)) || fail "rping client (size $size) exited $CLI_RC"
	((SRV_RC == 0)) || fail "rping server (size $size) exited $SRV_RC"
	# count distinct ping ids (stdout and stderr interleave in the log,
	# so whole lines may be split)
	got=$(grep -oE 'rdma-ping-[0-9]+:' "$TMPD/rping-$size.cli" | sort -u | wc -l)
	((got == c)) || fail "rping client printed $got distinct pings, expected $c (size $size)"
	got=$(grep -oE 'rdma-ping-[0-9]+:' "$TMPD/rping-$size.srv" | sort -u | wc -l)
	((got == c)) || fail "rping server printed $got distinct pings, expected $c (size $size)"
	port=$((port + 1))
done
dmesg_problems_since "$m"
echo "rping passed"
