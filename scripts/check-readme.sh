#!/usr/bin/env bash
# README check: the front page stays short, and every figure in its tables
# is in the committed result the row links.
#   scripts/check-readme.sh [README.md]     (default: the tree's README.md)
# Fails when:
#   - the page has more than 200 lines;
#   - a table cell, as rendered (a link counts as its text), is longer than
#     160 characters or holds more than one sentence;
#   - a row links a file of the tree that does not exist or that git does
#     not track (when the tree is a git checkout);
#   - a row that links files of the tree has a number, in any cell but
#     the first (the row's name) and outside `code` spans, that none of
#     those files holds as a number of its own (134.3 is not found in
#     1134.3 or 134.35; in a .tap file the test-point numbers of its
#     "ok N" lines do not count). A raw benchmark file docs/bench/X.tsv (with its
#     X.meta) counts as the tables scripts/bench-report.py makes of it,
#     as `scripts/bench.sh --table-only` prints them, and all of the row's
#     numbers must be in one of those tables (one phase of one run); the
#     main table is left out, as its in-tree siw and rxe cells are taken
#     from other phases' turns;
#   - a table with a "result" column has a row whose result cell neither
#     links a committed result (a file under docs/results/ or docs/bench/,
#     or docs/coverage.md, whose table scripts/coverage.sh --docs writes)
#     nor says that no committed run backs it ("not run in a committed
#     run", "built only").
# Prints "PAGE:LINE: what" per problem and a summary line
# "check-readme: N rows checked, M figures, K problems"; exit 1 if K > 0,
# 2 on usage errors.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
page=${1:-$top/README.md}
[[ -r $page ]] || { echo "check-readme.sh: cannot read $page" >&2; exit 2; }
command -v python3 >/dev/null || { echo "check-readme.sh: needs python3" >&2; exit 2; }

exec python3 - "$top" "$page" <<'PY'
import os
import re
import shutil
import subprocess
import sys
import tempfile

top, page = sys.argv[1], sys.argv[2]
MAX_LINES, MAX_CELL = 200, 160
NO_RUN = ("not run in a committed run", "built only")
rel = os.path.relpath(page, top) if page.startswith(top + "/") else page
base = os.path.dirname(os.path.abspath(page))
problems = []
rows_checked = figures = 0


def bad(line, msg):
    problems.append(f"{rel}:{line}: {msg}")


tracked = None
try:
    out = subprocess.run(["git", "-C", top, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    tracked = set(p for p in out.split("\0") if p)
except (OSError, subprocess.CalledProcessError):
    pass          # not a git checkout: existence is all that can be checked

LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
CODE = re.compile(r"`[^`]*`")
# a figure: digits with optional decimals, not part of a word (siw0,
# 59bab89, amd64), optionally followed by x or % (1.87x, 90.1%)
NUM = re.compile(r"(?<![\w.])(\d+(?:\.\d+)*)(?=x\b|%|[^\w]|$)")
# dates and times are one figure each (2026-12-06, 17:27): their parts
# alone would match any other date
STAMP = re.compile(r"(?<![\w.:-])(\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(?::\d{2})?)(?![\w:])")


def split_row(s):
    s = s.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells, cur, tick = [], "", False
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur += "|"
            i += 2
            continue
        if c == "`":
            tick = not tick
        if c == "|" and not tick:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    cells.append(cur.strip())
    return cells


def rendered(cell):
    t = LINK.sub(lambda m: m.group(1), cell)
    return t.replace("**", "").replace("`", "")


def sentences(text):
    t = re.sub(r"\b(e\.g|i\.e|etc|vs|cf)\.", "", text)
    return 1 + len(re.findall(r"[.!?](?=\s+\S)", t))


def targets(cell):
    for m in LINK.finditer(cell):
        u = m.group(2)
        if re.match(r"^[a-z]+:", u) or u.startswith("#"):
            continue
        yield u.split("#", 1)[0]


_bench = {}


def bench_tables(path):
    """The report's tables of a raw bench file, by section; None if the
    file is no full run (no .meta beside it)."""
    if path in _bench:
        return _bench[path]
    stem = path[:-4]
    if not os.path.exists(stem + ".meta"):
        _bench[path] = None
        return None
    d = tempfile.mkdtemp(prefix="check-readme.")
    try:
        for src, dst in ((stem + "-mem.tsv", "mem.tsv"),
                         (stem + "-host.tsv", "host.tsv")):
            if os.path.exists(src):
                shutil.copy(src, os.path.join(d, dst))
        r = subprocess.run(["python3", os.path.join(top, "scripts/bench-report.py"),
                            path, stem + ".meta", d], capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.decode(errors="replace").strip()[-300:])
        text = open(os.path.join(d, "results.md"), errors="replace").read()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    tables, head, cur = [], "", None
    for ln in text.splitlines():
        if ln.startswith("#"):
            head = ln.lstrip("#").strip()
        if ln.startswith("|"):
            if cur is None:
                cur = (head, [])
                tables.append(cur)
            cur[1].append(ln)
        else:
            cur = None
    _bench[path] = [(h, "\n".join(ls)) for h, ls in tables if h != "Main table"]
    return _bench[path]


def has(text, n):
    if not STAMP.fullmatch(n):
        text = STAMP.sub(" ", text)
    return re.search(r"(?<![0-9.:])" + re.escape(n) + r"(?![0-9]|[.:][0-9])", text) is not None


lines = open(page, errors="replace").read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
if len(lines) > MAX_LINES:
    bad(len(lines), f"{len(lines)} lines, more than {MAX_LINES}: the details belong in docs/")

fence = False
header = None
for no, ln in enumerate(lines, 1):
    if ln.lstrip().startswith("```"):
        fence = not fence
        continue
    if fence or not ln.lstrip().startswith("|"):
        header = None
        continue
    cells = split_row(ln)
    if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
        continue
    if header is None:
        header = [c.lower() for c in cells]
        continue
    for i, c in enumerate(cells, 1):
        t = rendered(c)
        if len(t) > MAX_CELL:
            bad(no, f"cell {i} has {len(t)} characters (at most {MAX_CELL}): one result and a link")
        if sentences(t) > 1:
            bad(no, f"cell {i} holds {sentences(t)} sentences (at most one): {t[:60]}...")
    # the files the row links
    files = []
    for u in (u for c in cells for u in targets(c)):
        p = os.path.normpath(os.path.join(base, u))
        r = os.path.relpath(p, top)
        if not os.path.exists(p):
            bad(no, f"links {u}, which does not exist")
            continue
        if tracked is not None and os.path.isfile(p) and r not in tracked:
            bad(no, f"links {u}, which is not committed")
            continue
        if os.path.isfile(p) and p not in files:
            files.append(p)
    if "result" in header:
        rc = cells[header.index("result")] if header.index("result") < len(cells) else ""
        ev = [u for u in targets(rc)
              if re.match(r"^(\./)?docs/((results|bench)/|coverage\.md$)", u)]
        if not ev and not any(s in rendered(rc) for s in NO_RUN):
            bad(no, "result cell links no committed result (docs/results/, docs/bench/, docs/coverage.md) "
                "and does not say 'not run in a committed run' or 'built only'")
    if not files:
        continue
    rows_checked += 1
    nums = []
    for c in cells[1:]:
        c = CODE.sub(" ", LINK.sub(lambda m: m.group(1), c))
        nums += STAMP.findall(c)
        nums += NUM.findall(STAMP.sub(" ", c))
    figures += len(nums)
    if not nums:
        continue
    plain, tabled = [], []
    for f in files:
        tabs = bench_tables(f) if f.endswith(".tsv") and "/docs/bench/" in f else None
        if tabs is not None:
            tabled.append((f, tabs))
        else:
            text = open(f, errors="replace").read()
            if f.endswith(".tap"):
                # a verdict's test-point number is no figure: without it,
                # a small count must match a count of the run
                text = re.sub(r"(?m)^(not )?ok \d+ |^\d+\.\.\d+$", "", text)
            plain.append((f, text))
    names = ", ".join(os.path.relpath(f, top) for f in files)
    if tabled:
        # one phase: every number of the row in one table of one run
        for f, tabs in tabled:
            if any(all(has(t, n) for n in nums) for _, t in tabs):
                break
        else:
            best = None
            for f, tabs in tabled:
                for h, t in tabs:
                    miss = [n for n in nums if not has(t, n)]
                    if best is None or len(miss) < len(best[2]):
                        best = (f, h, miss)
            f, h, miss = best
            miss = [n for n in miss if not any(has(t, n) for _, t in plain)]
            if miss:
                bad(no, f"{', '.join(miss)} not in the table of {os.path.relpath(f, top)}'s report "
                    f"closest to this row ('{h}'): a row's figures must come from one phase")
    else:
        for n in nums:
            if not any(has(t, n) for _, t in plain):
                bad(no, f"{n} is not in {names}")

for p in problems:
    print(p)
print(f"check-readme: {rows_checked} rows checked, {figures} figures, {len(problems)} problems")
sys.exit(1 if problems else 0)
PY
