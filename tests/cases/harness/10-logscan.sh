#!/usr/bin/env bash
# Harness self-test: the kernel-log scanner flags every report kind and
# ignores user-space text and clean kernel lines.
# timeout: 60
source "$(dirname "$0")/../../lib.sh"
d=$(mktemp -d)
on_exit "rm -rf $d"
bad=(
	"[   12.345679] WARNING: CPU: 1 PID: 42 at siw_qp.c:10 siw_foo+0x1/0x2 [siw]"
	"[   13.000000] BUG: KASAN: slab-use-after-free in siw_bar"
	"[   13.500001] BUG: KFENCE: out-of-bounds read"
	"[   14.000001] WARNING: possible circular locking dependency detected"
	"[   14.000002] WARNING: possible recursive locking detected"
	"[   14.000003] WARNING: inconsistent lock state"
	"[   14.000004] WARNING: suspicious RCU usage"
	"[   15.100000] Call Trace:"
	"kmemleak-report: unreferenced object 0xffff888012345678 (size 64):"
	"[   17.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"
	"[   18.000000] INFO: task kworker/0:1:12 blocked for more than 120 seconds."
	"[   18.500000] hung_task: blocked tasks"
	"[   19.000000] Kernel panic - not syncing: Fatal exception"
	"[   20.000000] general protection fault, probably for non-canonical address 0xdead"
	"[   21.000000] UBSAN: shift-out-of-bounds in drivers/x.c:1:2"
	"[   24.000000] Oops: 0000 [#1] PREEMPT SMP"
)
i=0
for l in "${bad[@]}"; do
	i=$((i + 1))
	printf '[    0.000000] Linux version x\nuser text\n%s\n[    30.0] reboot: Power down\n' "$l" >"$d/bad$i.log"
	out=$(scripts/logscan.sh "$d/bad$i.log") && fail "scanner missed: $l"
	grep -q "bad$i.log:3:" <<<"$out" || fail "scanner did not name line 3: $out"
done
cat >"$d/clean.log" <<'LOG'
[    0.000000] Linux version 6.12.95-siwdebug
[    0.100000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15719)
[    0.200000] kasan: KernelAddressSanitizer initialized (generic)
[    1.000000] siw: some info line
ib_write_bw: WARNING: user-space text with BUG: and Call Trace: must be ignored
@@CASE-END x rc=0 secs=1
LOG
scripts/logscan.sh "$d/clean.log" || fail "scanner flagged a clean log"
echo "scanner ok (${#bad[@]} positive samples)"
