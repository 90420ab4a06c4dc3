#!/usr/bin/env bash
# NVMe over Fabrics on siw over IPv6 (issue 22), one guest: the nvmet-rdma
# port listens on a ULA (fd00:89::1) and then on a link-local address with
# its scope id (fe80::89:1%ulp0), both on siw0's netdev; nvme-rdma connects
# to each, writes and reads back a pattern (O_DIRECT) and disconnects.
# While connected, the controller's TCP connections must be IPv6 ones.
# timeout: 300
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
source "$SIW_TOP/tests/lib/ulp-lib.sh"
need_cmd nvme rdma ss cmp
m=$(dmesg_mark)
NQN=$ULP_NQN_BASE:ipv6
S=$(scale 16 4) # MiB
step "${RDEV_PFX}0 on ulp0, fd00:89::1 and fe80::89:1 on ulp0"
ulp_siw_local
# nodad: usable at once, no duplicate address detection to wait for
run ip addr add fd00:89::1/64 dev ulp0 nodad
run ip addr add fe80::89:1/64 dev ulp0 nodad
nullb_create ulpnb6 "$S"
nb=$NULLB_DEV
pat=$TMPD/pat

# v6_conns: established IPv6 TCP connections to the NVMe port
v6_conns() { ss -Htn6 state established "( dport = :$ULP_PORT )" | wc -l; }
# one_addr TRADDR: connect to TRADDR, pattern write and read back, the
# connections IPv6, disconnect
one_addr() {
	local a=$1 n
	step "connect to [$a]:$ULP_PORT"
	nvme_host_connect "$NQN" "$a"
	grep -q "traddr=$a," "/sys/class/nvme/$NVME_CTRL/address" ||
		ulp_fail "$NVME_CTRL address is $(<"/sys/class/nvme/$NVME_CTRL/address"), not $a"
	n=$(v6_conns)
	# the admin queue and 2 I/O queues, each its own TCP connection
	((n >= 3)) || ulp_fail "$n established IPv6 TCP connections to port $ULP_PORT, expected >= 3: $(ss -Htn state established)"
	d=$(nvme_wait_ns "$NQN" 1)
	ulp_pattern "$pat" $((S << 20)) "v6-$a"
	blk_write_regions "$d" "$pat" $((S << 20))
	blk_verify_all "$d" "$pat" $((S << 20))
	cmp <(dd if="$nb" bs=1M iflag=direct status=none) "$pat" >/dev/null ||
		ulp_fail "target-side $nb differs from the pattern written over [$a]"
	info "[$a]: $n IPv6 connections, $S MiB written and read back"
	nvme_host_disconnect "$NQN" || ulp_fail "disconnect from [$a] failed"
	wait_for 30 ulp_no_qps || ulp_fail "QPs left after disconnect: $(rdma res show qp)"
}

step "nvmet target: rdma ipv6 [fd00:89::1]:$ULP_PORT"
NVMET_ADRFAM=ipv6 nvmet_up "$NQN" fd00:89::1 "$nb"
step "discover over IPv6"
ulp_mod nvme_rdma
out=$(timeout 60 nvme discover -t rdma -a fd00:89::1 -s "$ULP_PORT" 2>&1) || ulp_fail "nvme discover failed: $out"
grep -q "subnqn: *$NQN" <<<"$out" || ulp_fail "discovery log lacks $NQN: $out"
grep -q 'adrfam: *ipv6' <<<"$out" || ulp_fail "discovery log lacks adrfam ipv6: $out"
one_addr fd00:89::1

step "the port moved to fe80::89:1%ulp0"
nvmet_unlink "$NQN"
echo "fe80::89:1%ulp0" >"$NVMET_CFS/ports/1/addr_traddr" || ulp_fail "nvmet refused traddr fe80::89:1%ulp0"
nvmet_link "$NQN" || ulp_fail "nvmet: no rdma listener on fe80::89:1%ulp0"
one_addr "fe80::89:1%ulp0"
dmesg_problems_since "$m"
echo "nvme-ipv6 passed: NVMe-oF over $RDEV on a ULA and a link-local IPv6 address"
