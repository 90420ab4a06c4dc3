#!/usr/bin/env bash
# rsockets: rstream and riostream (stock librdmacm examples) between netns
# h1 and h2 over siw on veth1/veth2, a couple of transfer sizes. On iWARP
# rsockets uses plain SENDs (no write-with-immediate).
# timeout: 400
# timeout-debug: 1200
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rstream riostream rdma ss
m=$(dmesg_mark)
rdev_netns
p=7500
for tool in rstream riostream; do
	for size in 64 65536; do
		c=$(scale 500 30)
		((size == 65536)) && c=$(scale 100 10)
		srv_cli 300 "$tool-$size" "$p" \
			"$tool -b $H2_IP -p $p -S $size -C $c" \
			"$tool -s $H2_IP -p $p -S $size -C $c"
		((CLI_RC == 0)) || fail "$tool client (size $size) exited $CLI_RC"
		((SRV_RC == 0)) || fail "$tool server (size $size) exited $SRV_RC"
		# result line: name bytes xfers iters total time Gb/sec usec/xfer
		grep -qE '^[^ ]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9]+ +[0-9.]+[kmg]? +[0-9.]+s +[0-9.]+' "$TMPD/$tool-$size.cli" ||
			fail "$tool client (size $size): no result line"
		p=$((p + 1))
	done
done
dmesg_problems_since "$m"
echo "rstream/riostream passed"
