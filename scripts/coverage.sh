#!/usr/bin/env bash
# Line coverage of siw.ko from the test suite (issue 12): build the module
# with gcov (SIW_GCOV=1: Kbuild's GCOV_PROFILE), run tests/run on the debug
# kernel (CONFIG_GCOV_KERNEL) with tier "coverage" (tests/tiers) unless
# other tests/run arguments are given, one boot per group (--split); each
# boot's guest saves the counters of this tree's modules under
# build/gcov/KVER/BOOT/ (scripts/vm-guest-init.sh). They are summed with
# gcov-tool and reported per source file by gcov.
#
# usage: scripts/coverage.sh [--docs] [--report-only] [tests/run args...]
#   --docs         also write the table to docs/coverage.md
#   --report-only  no test run: report from the counters already saved
# Output: build/gcov/report.md (per file: lines and functions; the
# receive path's lines never run; the functions never entered; also printed), build/gcov/*.gcov (annotated
# sources: "#####" marks a line never run). The test run's own
# verdict is printed but does not decide this command's status: coverage
# is measured from what ran.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
docs=0 run=1 args=()
while (($#)); do
	case $1 in
	--docs) docs=1; shift ;;
	--report-only) run=0; shift ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) args+=("$1"); shift ;;
	esac
done
((${#args[@]})) || args=(--tier coverage)
kver=$(scripts/kernels.sh kver debug)
grep -q '^CONFIG_GCOV_KERNEL=y' "/boot/config-$kver" 2>/dev/null ||
	{ echo "coverage.sh: $kver is not built with CONFIG_GCOV_KERNEL" >&2; exit 1; }
gdir=$top/build/gcov
data=$gdir/$kver
t0=$SECONDS
if ((run)); then
	rm -rf "$gdir"
	rc=0
	SIW_GCOV=1 tests/run --kernel debug --split "${args[@]}" || rc=$?
	echo "# coverage.sh: tests/run exited $rc"
fi
shopt -s nullglob
boots=("$data"/*/)
((${#boots[@]})) || { echo "coverage.sh: no gcov data under $data" >&2; exit 1; }
obj=$top/build/$kver
ls "$obj"/siw_main.gcno >/dev/null 2>&1 ||
	{ echo "coverage.sh: no $obj/siw_main.gcno: the module there was not built with SIW_GCOV=1" >&2; exit 1; }

# Sum the boots: gcov-tool merge A B -o OUT adds the counters file by file.
sum=$gdir/sum
rm -rf "$sum"
cp -r "${boots[0]}" "$sum"
for b in "${boots[@]:1}"; do
	gcov-tool merge -o "$sum.new" "$b" "$sum" >/dev/null
	rm -rf "$sum"
	mv "$sum.new" "$sum"
done

# gcov reads NAME.gcda beside NAME.gcno in the object directory.
rm -f "$obj"/*.gcda
cp "$sum"/*.gcda "$obj/"
rep=$gdir/report.md
(
	cd "$gdir"
	rm -f ./*.gcov ./*.gcov.json.gz
	for g in "$obj"/siw_*.gcno; do
		src=$(basename "$g" .gcno).c
		[[ -e $obj/$src ]] && gcov --json-format -o "$obj" "$obj/$src" >/dev/null 2>&1
		gcov -o "$obj" "$obj/$src" >/dev/null 2>&1 || true
	done
)
names=$(for b in "${boots[@]}"; do basename "$b"; done | paste -sd, | sed 's/,/, /g')
python3 - "$gdir" "$obj" "$kver" "$names" "${args[*]}" >"$rep" <<'PY'
# Per source file of this tree: lines with code and how many ran, functions
# and how many were entered; a header line counts as run when any
# compilation unit ran it. Then the functions never entered.
import glob, gzip, json, os, sys
gdir, obj, kver, names, args = sys.argv[1:6]
lines, funcs = {}, {}
for j in sorted(glob.glob(os.path.join(gdir, '*.gcov.json.gz'))):
    d = json.load(gzip.open(j))
    for f in d['files']:
        path = os.path.join(d.get('current_working_directory', obj), f['file'])
        name = os.path.relpath(os.path.normpath(path), obj)
        if name.startswith('..') or name.startswith('/'):
            continue            # kernel headers
        ln = lines.setdefault(name, {})
        for l in f['lines']:
            ln[l['line_number']] = ln.get(l['line_number'], 0) + l['count']
        fn = funcs.setdefault(name, {})
        for x in f['functions']:
            fn[x['name']] = fn.get(x['name'], (x['start_line'], 0))
            fn[x['name']] = (x['start_line'], fn[x['name']][1] + x['execution_count'])
print(f'Line and function coverage of siw.ko on {kver}, from `tests/run {args}`, summed over the boots of: {names}.\n')
print('| file | lines | run | lines % | functions | entered | functions % |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
tl = tr = tf = te = 0
for name in sorted(lines, key=lambda n: (n.endswith('.h'), n)):
    nl = len(lines[name]); nr = sum(1 for c in lines[name].values() if c)
    nf = len(funcs[name]); ne = sum(1 for _, c in funcs[name].values() if c)
    if not nl:
        continue
    tl += nl; tr += nr; tf += nf; te += ne
    fp = f'{100 * ne / nf:.1f}%' if nf else '-'
    print(f'| {name} | {nl} | {nr} | {100 * nr / nl:.1f}% | {nf} | {ne} | {fp} |')
print(f'| **all** | {tl} | {tr} | **{100 * tr / tl:.1f}%** | {tf} | {te} | **{100 * te / tf:.1f}%** |')
# the receive path, which the hostile peer drives: every line not run
print('\nLines of the receive path (rx, ddp, mpa, rdmap) never run:\n')
for name in ('siw_rx.c', 'siw_ddp.c', 'siw_mpa.c', 'siw_rdmap.c'):
    miss = sorted(n for n, c in lines.get(name, {}).items() if not c)
    print(f'- {name}: ' + (', '.join(map(str, miss)) or 'none'))
print('\nFunctions never entered:\n')
for name in sorted(funcs):
    never = sorted((l, n) for n, (l, c) in funcs[name].items() if not c)
    if never:
        print(f'- {name}: ' + ', '.join(f'{n} ({l})' for l, n in never))
PY
cat "$rep"
echo "# annotated sources: $gdir/*.gcov; $((SECONDS - t0))s"
if ((docs)); then
	doc=docs/coverage.md
	[[ -e $doc ]] || { echo "coverage.sh: $doc missing (it holds the text around the table)" >&2; exit 1; }
	python3 - "$doc" "$rep" <<'PY'
import re, sys
doc, rep = sys.argv[1], sys.argv[2]
s = open(doc).read()
t = open(rep).read()
new, n = re.subn(r'(<!-- coverage:begin -->\n).*?(<!-- coverage:end -->)',
                 lambda m: m.group(1) + t + m.group(2), s, flags=re.S)
if n != 1:
    sys.exit("coverage.sh: no coverage:begin/end markers in " + doc)
open(doc, 'w').write(new)
PY
	echo "# wrote the table into $doc"
fi
