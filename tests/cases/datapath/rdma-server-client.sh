#!/usr/bin/env bash
# rdma_server / rdma_client (stock librdmacm examples, rdma_create_ep API,
# inline sends) between netns h1 and h2 over siw on veth1/veth2.
# timeout: 200
# timeout-debug: 600
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma_server rdma_client rdma ss
m=$(dmesg_mark)
rdev_netns
for i in 1 2 3; do
	p=$((7480 + i))
	srv_cli 120 "rdma-sc-$i" "$p" "rdma_server -s $H2_IP -p $p" "rdma_client -s $H2_IP -p $p"
	((CLI_RC == 0)) || fail "rdma_client run $i exited $CLI_RC"
	((SRV_RC == 0)) || fail "rdma_server run $i exited $SRV_RC"
	grep -q 'rdma_client: end 0' "$TMPD/rdma-sc-$i.cli" || fail "rdma_client: no 'end 0'"
	grep -q 'rdma_server: end 0' "$TMPD/rdma-sc-$i.srv" || fail "rdma_server: no 'end 0'"
done
dmesg_problems_since "$m"
echo "rdma_server/rdma_client passed"
