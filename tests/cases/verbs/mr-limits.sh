#!/usr/bin/env bash
# Memory registration limits (siw_mrlimits):
# - RLIMIT_MEMLOCK: an unprivileged process (uid 65534, no capabilities,
#   so no CAP_IPC_LOCK) with `ulimit -l` 64 KiB registers exactly 64 KiB;
#   one page (or byte) more fails with ENOMEM (ib_umem's pinned-page
#   accounting), repeated refusals take nothing from the budget, a
#   deregistration gives its pages back;
# - an MR of exactly max_mr_size (4 GiB - 1) built from one 13 MiB memfd
#   window mapped over and over (every page pinned, as often as it is
#   mapped; little memory), used by RDMA Writes and Reads at its start,
#   middle and end, as remote and as local buffer, every byte verified
#   (the whole window poisoned before and compared after each);
#   max_mr_size + 1 fails with EINVAL;
# - --full (SIW_TEST_FULL=1) also: 1.5 GiB of anonymous memory, really
#   pinned (the guest has 2 GiB; checked first), the same operations, then
#   the whole MR compared.
# Afterwards: no MR or QP left in `rdma res show` (the command must
# work), the device deletes cleanly, the kernel log is clean.
# timeout: 600
# timeout-debug: 2400
source "$(dirname "$0")/../../lib/lib.sh"
source "$SIW_TOP/tests/lib/caselib.sh"
need_cmd rdma ip setpriv prlimit
need_tool siw_mrlimits
m=$(dmesg_mark)
rdev_veth_local

limit=65536
info "memlock: uid 65534, no capabilities, RLIMIT_MEMLOCK $limit"
rc=0
prlimit --memlock=$limit:$limit setpriv --reuid=65534 --regid=65534 --clear-groups \
	--inh-caps=-all --bounding-set=-all \
	"$BIN/siw_mrlimits" memlock -d "$RDEV" -l "$limit" >"$TMPD/memlock.log" 2>&1 || rc=$?
cat "$TMPD/memlock.log"
# a memlock failure is reported at the end: the big MRs run regardless
bad=()
n=$(grep -c 'refused with ENOMEM' "$TMPD/memlock.log" || true)
if ((rc != 0)); then
	bad+=("siw_mrlimits memlock failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/memlock.log" || true)")
elif ! grep -q '^ok - memlock: 0 failure' "$TMPD/memlock.log"; then
	bad+=("memlock: no summary line")
elif ((n != 7)); then
	bad+=("memlock: $n refusals with ENOMEM reported, expected 7")
fi

# leftovers of a process that ended: `rdma res show` must work and list
# nothing of ours on the device
ours() { # TYPE...
	local t out
	for t in "$@"; do
		out=$(rdma res show "$t") || { echo "rdma res show $t failed (rc=$?)"; return 0; }
		grep -E "(^| )(dev|link) $RDEV(/[0-9]+)? " <<<"$out" | grep -v 'comm \[' || true
	done
}
wait_for 20 test -z "$(ours mr pd)" || bad+=("after the memlock run: $(ours mr pd | head -n 5)")
info "memlock: nothing left in rdma res show mr/pd"

# 1.5 GiB, really pinned (--full: about 60 s here): the guest must have
# the memory
if ((${SIW_TEST_FULL:-0})); then
	size=$((1536 << 20))
	avail=$(awk '$1 == "MemAvailable:" { print $2 * 1024 }' /proc/meminfo)
	info "MemAvailable $((avail >> 20)) MiB"
	((avail >= size + (160 << 20))) ||
		fail "the guest has $((avail >> 20)) MiB available, the 1.5 GiB MR needs $(((size >> 20) + 160)) (scripts/vm.sh --mem)"
	t0=$SECONDS
	rc=0
	timeout 900 "$BIN/siw_mrlimits" big -a "$RDEV_IP" -p 18800 -s "$size" >"$TMPD/big.log" 2>&1 || rc=$?
	cat "$TMPD/big.log"
	info "1.5 GiB MR: $((SECONDS - t0)) s"
	((rc == 0)) || fail "1.5 GiB MR failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/big.log" || true)"
	n=$(grep -c '^ok - .*bytes verified$' "$TMPD/big.log" || true)
	((n == 12)) || fail "1.5 GiB MR: $n verified operations, expected 12"
	grep -q '^ok - whole MR of ' "$TMPD/big.log" || fail "1.5 GiB MR: the whole-MR comparison did not run"
fi

t0=$SECONDS
rc=0
timeout 900 "$BIN/siw_mrlimits" big -a "$RDEV_IP" -p 18801 -s 0 -w $((13 << 20)) >"$TMPD/max.log" 2>&1 || rc=$?
cat "$TMPD/max.log"
info "max_mr_size MR: $((SECONDS - t0)) s"
((rc == 0)) || fail "max_mr_size MR failed (rc=$rc): $(grep -m1 '^FAIL' "$TMPD/max.log" || true)"
grep -qE '^# device .*max_mr_size 4294967295$' "$TMPD/max.log" || fail "max_mr_size is not 4 GiB - 1"
n=$(grep -c '^ok - .*bytes verified$' "$TMPD/max.log" || true)
((n == 12)) || fail "max_mr_size MR: $n verified operations, expected 12"
grep -q '^ok - max_mr_size + 1 = 4294967296 bytes refused with EINVAL' "$TMPD/max.log" ||
	fail "max_mr_size + 1 was not refused with EINVAL"

wait_for 20 test -z "$(ours mr qp pd)" || fail "after the big MRs: $(ours mr qp pd | head -n 5)"
info "nothing left in rdma res show mr/qp/pd"
run rdma link delete "$RDEV"
siw_gone "$RDEV" || fail "$RDEV still present after rdma link delete"
dmesg_problems_since "$m"
((${#bad[@]} == 0)) || fail "${bad[*]}"
echo "mr-limits passed"
