#!/usr/bin/env bash
# Harness self-test: the kernel-log scanner (scripts/logscan.sh with the one
# list scripts/logscan.patterns) flags a sample of every report kind the
# debug kernel can print, ignores user-space text and clean kernel lines,
# and waives a kmemleak scan line only with one valid proof line per object.
# dmesg_problems_since (tests/lib/lib.sh) uses the same scanner.
# timeout: 180
source "$(dirname "$0")/../../lib/lib.sh"
d=$(mktemp -d)
on_exit "rm -rf $d"
bad=(
	# oopses, BUG/WARN, faults, panics
	"[   12.345679] WARNING: CPU: 1 PID: 42 at siw_qp.c:10 siw_foo+0x1/0x2 [siw]"
	"[   24.000000] Oops: 0000 [#1] PREEMPT SMP"
	"[   24.100000] BUG: unable to handle page fault for address: ffffed1000000000"
	"[   24.200000] kernel BUG at lib/list_debug.c:59!"
	"[   20.000000] general protection fault, probably for non-canonical address 0xdead"
	"[   20.100000] general protection fault: 0000 [#1] PREEMPT SMP KASAN NOPTI"
	"[   19.000000] Kernel panic - not syncing: Fatal exception"
	"[   19.100000] PANIC: double fault, error_code: 0x0"
	"[   15.100000] Call Trace:"
	"[   15.200000] BUG kmalloc-64 (Not tainted): Poison overwritten"
	# sanitizers
	"[   13.000000] BUG: KASAN: slab-use-after-free in siw_bar+0x10/0x20 [siw]"
	"[   13.500001] BUG: KFENCE: out-of-bounds read in siw_baz"
	"[   21.000000] UBSAN: shift-out-of-bounds in drivers/x.c:1:2"
	"[   21.100000] UBSAN: array-index-out-of-bounds in siw_qp.c:77:9"
	# lockdep
	"[   14.000001] WARNING: possible circular locking dependency detected"
	"[   14.000002] WARNING: possible recursive locking detected"
	"[   14.000003] WARNING: inconsistent lock state"
	"[   14.000004] WARNING: suspicious RCU usage"
	"[   14.000005] WARNING: possible irq lock inversion dependency detected"
	"[   14.000006] WARNING: bad unlock balance detected!"
	"[   14.000007] INFO: trying to register non-static key."
	"[   14.000008] DEBUG_LOCKS_WARN_ON(lock->magic != lock)"
	# kmemleak
	"kmemleak-report: unreferenced object 0xffff888012345678 (size 64):"
	"[   17.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"
	# kmemleak switched off or no longer scanning
	"[   17.100000] kmemleak: Kernel memory leak detector disabled"
	"[   17.200000] kmemleak: Cannot allocate a kmemleak_object structure"
	"[   17.300000] kmemleak: Cannot insert 0xffff888004000000 into the object search tree (overlaps existing)"
	"[   17.400000] kmemleak: Memory pool empty, consider increasing CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE"
	"[   17.500000] kmemleak: Automatic memory scanning thread ended"
	# hung tasks, RCU stalls, lockups
	"[   18.000000] INFO: task kworker/0:1:12 blocked for more than 300 seconds."
	"[   18.500000] hung_task: blocked tasks"
	"[   18.600000] siw siw0: QP 5: destroy blocked for more than 30 s, 2 reference(s) left"
	"[   22.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"
	"[   22.100000] rcu: INFO: rcu_preempt self-detected stall on CPU"
	"[   22.200000] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [kworker/0:1:12]"
	"[   22.300000] Watchdog detected hard LOCKUP on cpu 1"
	# DEBUG_OBJECTS, DEBUG_LIST
	"[   23.000000] ODEBUG: free active (active state 0) object: ffff8880 object type: work_struct hint: siw_cm_work+0x0/0x10 [siw]"
	"[   23.100000] ODEBUG: activate not available (active state 0) object: ffff8881 object type: timer_list"
	"[   23.200000] list_add corruption. prev->next should be next (ffff8880), but was 0000000000000000. (prev=ffff8881)."
	"[   23.300000] list_del corruption, ffff8880->next is LIST_POISON1 (dead000000000100)"
	# reference trackers, netdev refcount
	"[   25.000000] ref_tracker: netdev@ffff888004f3c5c8 has 1/1 users at"
	"[   25.100000] ref_tracker: net notrefcnt@ffff88800a1b2c3d has 2/2 users at"
	"[   25.200000] ref_tracker: reference already released."
	"[   25.300000] unregister_netdevice: waiting for veth1 to become free. Usage count = 2"
)
info "positive samples"
# one file per sample, one scanner run (a run per sample is slow under TCG)
i=0 files=()
for l in "${bad[@]}"; do
	i=$((i + 1))
	printf '[    0.000000] Linux version x\nuser text\n%s\n[    30.0] reboot: Power down\n' "$l" >"$d/bad$i.log"
	files+=("$d/bad$i.log")
done
out=$(scripts/logscan.sh "${files[@]}") && fail "scanner found nothing in ${#files[@]} samples"
i=0
for l in "${bad[@]}"; do
	i=$((i + 1))
	grep -q "/bad$i.log:3: " <<<"$out" || fail "scanner missed: $l"
done
[[ $(wc -l <<<"$out") -eq ${#bad[@]} ]] || fail "scanner reported other lines than the samples: $out"
info "clean log"
cat >"$d/clean.log" <<'LOG'
[    0.000000] Linux version 6.12.95-siwdebug
[    0.000000] Kernel command line: console=ttyS0 panic=-1 rcupdate.rcu_cpu_stall_timeout=300
[    0.100000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15719)
[    0.150000] kmemleak: Automatic memory scanning thread started
[    0.160000] kmemleak: Cannot allocate a scan area, scanning the full object
[    0.200000] kasan: KernelAddressSanitizer initialized (generic)
[    0.300000] ODEBUG: selftest passed
[    1.000000] siw: some info line
[    1.200000] traps: ib_send_bw[944] general protection fault ip:7f882bd3a472 sp:7ffcbdeda660 error:0 in librdmacm.so.1.3.44.0[7f882bd34000+15000]
[    1.100000] siwtest: siwtest-mark-1-2-3
ib_write_bw: WARNING: user-space text with BUG: and Call Trace: must be ignored
@@CASE-END x rc=0 secs=1
LOG
scripts/logscan.sh "$d/clean.log" || fail "scanner flagged a clean log"

info "waivers"
# kmemleak waivers: N objects need N valid proof lines within 120 s
leak='[  100.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)'
w() { printf '[  %s] siwtest: kmemleak-waived 0xffff88800000000%s %s %s\n' "$1" "$2" "$3" "$4"; }
waived() { # NAME EXPECT(0 clean|1 hit) LINES...
	local n=$1 e=$2 rc=0
	shift 2
	printf '%s\n' "$leak" "$@" >"$d/w-$n.log"
	scripts/logscan.sh "$d/w-$n.log" >/dev/null || rc=$?
	((rc == e)) || fail "waiver case $n: logscan rc=$rc, expected $e: $(cat "$d/w-$n.log")"
}
waived two-proofs 0 "$(w 101.0 1 reference siw_cm_work_handler)" "$(w 101.0 2 selftest siw_test_leak)"
waived one-proof 1 "$(w 101.0 1 reference siw_cm_work_handler)"
waived late-proof 1 "$(w 221.0 1 reference siw_a)" "$(w 221.0 2 reference siw_b)"
waived proof-first 1
printf '%s\n' "$(w 99.0 1 reference siw_a)" "$(w 99.0 2 reference siw_b)" "$leak" >"$d/w-before.log"
scripts/logscan.sh "$d/w-before.log" >/dev/null && fail "a proof before the kmemleak line waived it"
waived not-siw 1 "$(w 101.0 1 reference kfree)" "$(w 101.0 2 reference siw_b)"
waived bad-selftest 1 "$(w 101.0 1 selftest siw_other)" "$(w 101.0 2 selftest siw_test_leak)"
waived bad-kind 1 "$(w 101.0 1 ours siw_a)" "$(w 101.0 2 reference siw_b)"

info "dmesg_problems_since"
# dmesg_problems_since uses the same list: fed through a stand-in dmesg (a
# sample written to /dev/kmsg would fail this boot's own kernel-log scan)
sample='[   40.000000] siwtest: siwtest-mark-x'
(dmesg() { printf '%s\n' "$sample" '[   41.000000] siw: harmless'; }; dmesg_problems_since siwtest-mark-x) ||
	fail "dmesg_problems_since flagged a harmless line"
(dmesg() { printf '%s\n' "$sample" '[   41.000000] ODEBUG: free active (active state 0) object: 1 object type: work_struct'; }
	dmesg_problems_since siwtest-mark-x) >"$d/dps.out" 2>&1 && fail "dmesg_problems_since missed an ODEBUG line"
grep -q 'ODEBUG' "$d/dps.out" || fail "dmesg_problems_since did not name the line: $(cat "$d/dps.out")"
echo "scanner ok (${#bad[@]} positive samples, waiver rules, dmesg_problems_since)"
