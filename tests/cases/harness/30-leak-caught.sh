#!/usr/bin/env bash
# Harness self-test: a leak of ours is caught, and cannot be charged to the
# kernel's own siw. Loads build/leak/$KVER/siw.ko (ours built with
# -DSIW_TEST_LEAK by tests/run: loses 8 objects of 64 bytes in siw_test_leak
# at load, frees them at unload) and asserts:
#  - kmemleak reports at least one of them, with siw_test_leak in its
#    backtrace, and the kernel logged the "new suspected memory leaks" line
#    that scripts/logscan.sh flags. kmemleak is conservative: a stale word
#    equal to an object's address hides the object, and what the object
#    points to. From kmalloc-64 loads reported 0 to 8 of 8 (each object
#    still held SLUB's pointer to the next one: one stale word hid the
#    chain); from the build's own zeroed slab cache, 8 of 8 (docs/testing.md,
#    flakes). Fewer than 8 reported is a NOTICE with the count (a stale
#    copy of one object's own address still hides that one);
#  - the interop attribution (kmemleak_attribute ... reference, as on the
#    guest running the reference) refuses it;
#  - only the proof by the test-only function waives it (this case's own
#    leak), and the boot's log scan then still passes.
# Needs kmemleak: debug kernel only.
# timeout: 120
# timeout-debug: 900
source "$(dirname "$0")/../../lib/lib.sh"
need_cmd nm insmod rmmod
if [[ ! -e /sys/kernel/debug/kmemleak ]]; then
	kmemleak_required && fail "kmemleak missing on $(uname -r), a kernel built with it"
	skip "no kmemleak in this kernel (the debug kernel has it)"
fi
leak=$SIW_TOP/build/leak/$(uname -r)/siw.ko
ref=$SIW_TOP/build/ref/$(uname -r)/siw.ko
[[ -e $leak ]] || fail "leaking test build missing: $leak (tests/run builds it for debug kernels)"
[[ -e $ref ]] || fail "reference siw missing: $ref (scripts/build-ref.sh)"
[[ -e $SIW_KO ]] || fail "module not built: $SIW_KO"

siw_unload
kmemleak_scan_check || fail "kmemleak before the leaking build was loaded: $KMEMLEAK_WHY"
m=$(dmesg_mark)
for d in $(modinfo -F depends "$leak" | tr ',' ' '); do modprobe "$d" || fail "modprobe $d"; done
insmod "$leak" || fail "insmod $leak"
on_exit "rmmod siw"
# how many objects the build planted: its own line says
nplant=$(dmesg_since "$m" | sed -n 's/.*SIW_TEST_LEAK build, lost \([0-9]*\)x64 bytes: yes.*/\1/p' | tail -n 1)
((${nplant:-0} > 0)) || fail "the leaking build did not say it leaked: $(dmesg_since "$m" | tail -n 5)"

rep=$(kmemleak_report) || fail "kmemleak_report failed"
[[ -n $rep ]] || fail "kmemleak reports nothing after the leaking build was loaded"
printf '%s\n' "$rep" | head -n 30
# objects whose backtrace holds siw_test_leak (of those the report lists)
planted=$(awk '/^unreferenced object 0x/ { a = $3 } /siw_test_leak\+0x[0-9a-f]+\/0x[0-9a-f]+ \[siw\]/ && a != "" { print a; a = "" }' <<<"$rep" | wc -l)
((planted > 0)) || fail "no object with siw_test_leak [siw] in its backtrace"
echo "# kmemleak reported $planted of the $nplant planted objects"
((planted == nplant)) || notice "kmemleak reported $planted of the $nplant planted objects: the others had a stale copy of their address somewhere it scans"

# the scan line the kernel-log scanner catches
f=$(mktemp)
on_exit "rm -f $f"
dmesg_since "$m" >"$f"
grep -qE 'kmemleak: [0-9]+ new suspected memory leak' "$f" || fail "kmemleak logged no 'new suspected memory leaks' line"
scripts/logscan.sh "$f" >/dev/null && fail "logscan.sh did not flag the leak"
echo "# logscan flags: $({ scripts/logscan.sh "$f" || true; } | head -n 1)"
(dmesg_problems_since "$m") >/dev/null 2>&1 && fail "dmesg_problems_since did not flag the leak"

# as on the reference's guest: the leak must not be attributed to the reference
(kmemleak_attribute "$rep" reference "$SIW_KO" "$ref") && fail "kmemleak_attribute charged our leak to the reference (normal build as ours)"
(kmemleak_attribute "$rep" reference "$leak" "$ref") && fail "kmemleak_attribute charged our leak to the reference (leaking build as ours)"
dmesg_since "$m" | grep -q 'kmemleak-waived' && fail "a refused attribution still logged a waiver"
echo "# the reference attribution refused the leak of ours"

# this case's own leak: waived only by the test-only function, then clean
kmemleak_attribute "$rep" selftest "$SIW_KO" "$leak" siw_test_leak || fail "the selftest waiver did not prove the test leak"
dmesg_since "$m" >"$f"
scripts/logscan.sh "$f" || fail "logscan.sh still flags the leak after one proof per object"
kmemleak_scan_check || fail "kmemleak after the waiver cleared the planted leak: $KMEMLEAK_WHY"
echo "leak of ours caught; not chargeable to the reference"
