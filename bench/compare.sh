#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# compare.sh: build two revisions of wspool and run their benchmark programs
# alternately, printing paired ratios per benchmark row.
#
# Usage:
#   bash bench/compare.sh [options] OLD NEW [BENCH...]
#
#   OLD, NEW   git revisions (commit ids, branch names, HEAD, HEAD~1, ...);
#              the word WORKTREE stands for the current working tree with its
#              uncommitted changes and untracked, not ignored, files (normally
#              given as NEW; taken as a snapshot when the script starts).
#   BENCH      benchmark programs to run (bench_fib or just fib); default:
#              every bench_* program both builds produced.
#   -n N       rounds (default 5): each round runs OLD's program and then
#              NEW's, and every other round NEW's first, to cancel drift.
#   -t PCT     threshold of the verdict, in percent (default 3).
#   -w DIR     work directory (default ${TMPDIR:-/tmp}/wspool-compare); each
#              invocation uses a fresh subdirectory of it, removed at exit.
#   -k         keep that subdirectory (sources, builds, every run's output).
#   -T SECS    time limit of one program run (default 900; 0: none).
#   --peers    build the peer baselines too (-Dpeers=enabled: OpenMP, oneTBB,
#              GLib must be installed); default -Dpeers=disabled.
#   -P FILE    apply the patch FILE (`patch -p1`) to NEW's tree before its
#              build: an A/B of one mechanism against its simpler design,
#              e.g. bench/ab/*.patch (repeatable; fails if it does not apply).
#   -D OPT     a meson option for NEW's build only, e.g. -D membarrier=disabled
#              (repeatable).
#   -h         this text.
#
# Each revision is exported with `git archive` (WORKTREE: the files that
# `git ls-files -co --exclude-standard` lists, copied with tar) into the
# work directory, so the repository, its index, its work tree and its list of
# worktrees are never touched. Each is built there with
#   meson setup -Dbuildtype=release -Dpeers=disabled [-Dtests=false
#   -Dexamples=false, where the revision has those options] && ninja
#
# The benchmark programs' environment passes through to both sides alike:
# WSPOOL_BENCH_RUNS (runs per variant, whose median each program prints;
# default 5, 7 for bench_submit), WSPOOL_BENCH_BUDGET (seconds per program,
# default 45, 150 for bench_submit) and the size knobs, e.g.
# WSPOOL_BENCH_FIB_N, WSPOOL_BENCH_NQUEENS_N, WSPOOL_BENCH_SORT_N,
# WSPOOL_BENCH_PARFOR_N / _WORK / _LOAD, WSPOOL_BENCH_CPP_N, WSPOOL_BENCH_UTS
# (T1, T3 or wait), WSPOOL_BENCH_SUBMIT_N, WSPOOL_BENCH_WAKE_REPS,
# WSPOOL_BENCH_IDLE_S. A quick functional check, for example:
#   WSPOOL_BENCH_RUNS=1 WSPOOL_BENCH_BUDGET=2 WSPOOL_BENCH_FIB_N=20 \
#     bash bench/compare.sh -n 2 HEAD~1 HEAD fib
#
# What it reads from each run's standard output (a run that exits non-zero
# or times out is reported and its figures are left out):
#  - The variant tables that benchutil.h's bench_table prints (bench_fib,
#    bench_nqueens, bench_sort, bench_parfor, bench_uts, bench_cpp,
#    bench_placement): after the header line "variant  thr  median ms  min ms
#    spread runs ...", every row "<name> <thr> <median ms> <min ms> <n>% <runs>
#    <3 ratio columns>" up to the next blank line or "(" line; the figure is
#    the MEDIAN ms column (lower is better). Rows of peers that were not built
#    ("(peer unavailable ...)") have no figure and are skipped.
#  - bench_submit: the throughput table (header "variant  min ms  median ms
#    max ms runs  Mt/s max  Mt/s med ..."): the "Mt/s med" column, M tasks/s
#    of the median run (higher is better); the wake latency table (header
#    "variant  min  p50  p90  p99  max  reps"): the p50 column in us (lower is
#    better); the idle CPU lines "<name> <x> ms CPU in <s> s = <p>% of a
#    core": <p> (lower is better; one measurement per run, not a median).
#  - bench_idle: both tables (header "variant  p50 us  p99 us  jobs/s  spin
#    M/s"), each cell "<median> [<min>, <max>]": the median, per column (p50
#    and p99 lower is better, jobs/s and spin M/s higher); the rows of the
#    second table are the paired ratios against threads + condvar (unit x).
#  - bench_profile: its table (header "program  P  off  on  on / off ..."),
#    each cell "<median> [<min>, <max>]": per program and P, the off and on
#    times in s and the on / off ratio (lower is better, all three).
#  - bench_knapsack: its table (header "variant  time  / Ts"), each row
#    "<name> <median> [<min>, <max>]  <ratio>": the median in s (lower is
#    better).
#  - Not read: the ratio, paired-ratio and target lines (they are derived
#    from the rows above), the machine checks and cross-core round trips,
#    bench_submit's round-by-round table and bench_uts's waiter CPU (a target
#    line whose median of 3 runs is printed with 0.1 ms resolution).
#  A row is named "<section> / <variant>" when a program prints more than
#  one table, the section being the last "== <prog>: ..." or "-- ..." title
#  up to its first " (" or ";" (e.g. "load: uniform / plain loop",
#  "UTS T1 / wspool LIFO T2"), and bench_submit's tables being "throughput",
#  "wake latency p50" and "idle CPU".
#
# What it prints: the revisions and the WSPOOL_* environment, `uptime` with a
# warning when the 1-minute load average is above 0.5, progress on stderr,
# then for each program a table with one line per row: the median over rounds
# of the OLD and NEW figures, the paired ratio of every round, their median,
# min and max. The paired ratio is a slowdown factor, oriented so that > 1
# means NEW is slower: NEW/OLD for times and CPU, OLD/NEW for rates (Mt/s).
# At the end, a verdict line per row, flagged "SLOWER" when the median paired
# slowdown exceeds the threshold (-t), and one overall verdict line.
#
# Time: each program keeps its own runs within WSPOOL_BENCH_BUDGET (45 s;
# bench_submit 150 s, plus its idle and wake parts), so at the defaults one
# round of all eight programs on both sides takes in the order of 15 minutes.
#
# Exit status: 0 whatever the figures say (a measuring tool, not a test);
# 1 when a build fails; 2 for a usage error or a revision that git cannot
# resolve.
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^#   -h/p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
  printf 'compare.sh: %s\n' "$*" >&2
  exit 2
}

rounds=5
threshold=3
work_dir="${TMPDIR:-/tmp}/wspool-compare"
keep=0
run_timeout=900
peers=disabled
new_patches=()
new_opts=()
positional=()
while (($#)); do
  case "$1" in
    -n) [[ $# -ge 2 ]] || die "-n needs a value"; rounds="$2"; shift 2 ;;
    -t) [[ $# -ge 2 ]] || die "-t needs a value"; threshold="$2"; shift 2 ;;
    -w) [[ $# -ge 2 ]] || die "-w needs a value"; work_dir="$2"; shift 2 ;;
    -T) [[ $# -ge 2 ]] || die "-T needs a value"; run_timeout="$2"; shift 2 ;;
    -k) keep=1; shift ;;
    --peers) peers=enabled; shift ;;
    -P) [[ $# -ge 2 ]] || die "-P needs a file"; [[ -f $2 ]] || die "-P: no file '$2'"
        new_patches+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift 2 ;;
    -D) [[ $# -ge 2 ]] || die "-D needs an option"; new_opts+=("-D$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; positional+=("$@"); break ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[[ ${#positional[@]} -ge 2 ]] || { usage >&2; die "OLD and NEW are required"; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-n: a positive integer, not '$rounds'"
[[ $threshold =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-t: a percentage, not '$threshold'"
[[ $run_timeout =~ ^[0-9]+$ ]] || die "-T: seconds, not '$run_timeout'"
old_rev="${positional[0]}"
new_rev="${positional[1]}"
wanted=()
for b in "${positional[@]:2}"; do
  b="${b##*/}"
  [[ $b == bench_* ]] || b="bench_$b"
  wanted+=("$b")
done

command -v python3 >/dev/null || die "python3 is needed for the statistics"
command -v meson >/dev/null || die "meson is not installed"
command -v ninja >/dev/null || die "ninja is not installed"

# The repository: the one this script lives in, else the current directory's.
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null ||
  git rev-parse --show-toplevel 2>/dev/null)" || die "not inside a git repository"

mkdir -p "$work_dir"
run_dir="$(mktemp -d "$work_dir/run.XXXXXX")"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if ((keep)); then
    printf 'compare.sh: kept %s\n' "$run_dir" >&2
  else
    rm -rf -- "$run_dir"
    rmdir -- "$work_dir" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- export and build ------------------------------------------------------

# describe REV: one line naming what REV is.
describe() {
  local rev="$1" sha
  if [[ $rev == WORKTREE ]]; then
    sha="$(git -C "$top" rev-parse --short HEAD)"
    printf 'WORKTREE = HEAD %s plus uncommitted and untracked (not ignored) files, as of %s' \
      "$sha" "$(date '+%F %T')"
  else
    sha="$(git -C "$top" log -1 --format='%h %<(90,trunc)%s' "$rev" -- 2>/dev/null)" || return 1
    printf '%s = %s' "$rev" "${sha%"${sha##*[! ]}"}"
  fi
}

# export_rev REV DEST: the tree of REV (or the working tree) into DEST.
export_rev() {
  local rev="$1" dest="$2" sha f
  mkdir -p "$dest"
  if [[ $rev == WORKTREE ]]; then
    # Tracked files as they are on disk (deleted ones left out) and untracked,
    # not ignored ones; reads the index, never writes it.
    while IFS= read -r -d '' f; do
      if [[ -e $top/$f || -L $top/$f ]]; then printf '%s\0' "$f"; fi
    done < <(git -C "$top" ls-files -z -co --exclude-standard) |
      tar -C "$top" --null --no-recursion -T - -cf - | tar -C "$dest" -xf -
  else
    sha="$(git -C "$top" rev-parse --verify --quiet "$rev^{commit}")" ||
      die "'$rev' is not a revision of $top"
    git -C "$top" archive --format=tar "$sha" | tar -C "$dest" -xf -
  fi
}

# build SIDE: configure and build $run_dir/SIDE/src in $run_dir/SIDE/build.
build() {
  local side="$1" src="$run_dir/$1/src" bld="$run_dir/$1/build" log="$run_dir/$1/build.log"
  local opts=(-Dbuildtype=release) optfile="" o
  for o in meson_options.txt meson.options; do
    if [[ -f $src/$o ]]; then optfile="$src/$o"; fi
  done
  # Only options this revision declares (meson rejects unknown ones).
  if [[ -n $optfile ]]; then
    if grep -q "option('peers'" "$optfile"; then opts+=("-Dpeers=$peers"); fi
    if grep -q "option('tests'" "$optfile"; then opts+=(-Dtests=false); fi
    if grep -q "option('examples'" "$optfile"; then opts+=(-Dexamples=false); fi
  fi
  if [[ $side == NEW ]]; then opts+=("${new_opts[@]}"); fi
  printf 'building %s: meson setup %s && ninja\n' "$side" "${opts[*]}" >&2
  if ! { meson setup "${opts[@]}" "$bld" "$src" && ninja -C "$bld"; } >"$log" 2>&1; then
    printf 'compare.sh: the %s build failed; the end of %s:\n' "$side" "$log" >&2
    tail -n 40 "$log" >&2
    keep=1
    exit 1
  fi
}

# contains WORD LIST...: whether WORD is one of LIST.
contains() {
  local w="$1" x
  shift
  for x in "$@"; do
    if [[ $x == "$w" ]]; then return 0; fi
  done
  return 1
}

# programs SIDE: the bench_* executables SIDE's build made, one a line.
programs() {
  local f
  for f in "$run_dir/$1/build/bench"/bench_*; do
    if [[ -f $f && -x $f ]]; then printf '%s\n' "${f##*/}"; fi
  done
}

old_desc="$(describe "$old_rev")" || die "'$old_rev' is not a revision of $top"
new_desc="$(describe "$new_rev")" || die "'$new_rev' is not a revision of $top"
export_rev "$old_rev" "$run_dir/OLD/src"
export_rev "$new_rev" "$run_dir/NEW/src"
for p in "${new_patches[@]}"; do
  patch -s -p1 -d "$run_dir/NEW/src" <"$p" || { keep=1; printf 'compare.sh: %s does not apply to NEW\n' "$p" >&2; exit 1; }
done
for b in "${wanted[@]}"; do
  [[ -f $run_dir/OLD/src/bench/$b.c ]] || die "OLD ($old_rev) has no bench/$b.c"
  [[ -f $run_dir/NEW/src/bench/$b.c ]] || die "NEW ($new_rev) has no bench/$b.c"
done
build OLD
build NEW

mapfile -t old_progs < <(programs OLD)
mapfile -t new_progs < <(programs NEW)
progs=()
if ((${#wanted[@]})); then
  for b in "${wanted[@]}"; do
    if ! contains "$b" "${old_progs[@]}" || ! contains "$b" "${new_progs[@]}"; then
      printf 'compare.sh: %s was not built on both sides (C++ missing?); skipped\n' "$b" >&2
    else
      progs+=("$b")
    fi
  done
else
  for b in "${new_progs[@]}"; do
    if contains "$b" "${old_progs[@]}"; then
      progs+=("$b")
    else
      printf 'compare.sh: %s exists in NEW only; skipped\n' "$b" >&2
    fi
  done
  for b in "${old_progs[@]}"; do
    if ! contains "$b" "${new_progs[@]}"; then
      printf 'compare.sh: %s exists in OLD only; skipped\n' "$b" >&2
    fi
  done
fi
((${#progs[@]})) || { printf 'compare.sh: no benchmark to run\n' >&2; exit 0; }

# ---- the report (parsing and statistics) -------------------------------------

report_py="$run_dir/report.py"
cat >"$report_py" <<'PY'
"""Parse the runs listed in a manifest and print paired ratios.

argv: MODE (table | verdict), MANIFEST, THRESHOLD (percent), ROUNDS, [PROG]
manifest lines: prog <TAB> round <TAB> side (OLD/NEW) <TAB> exit status <TAB> stdout file
"""
import math
import re
import statistics
import sys
from collections import OrderedDict

F = r'([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|[-+]?nan)'
HDR_TABLE = re.compile(r'^variant\s+thr\s+median ms\s')
ROW_TABLE = re.compile(r'^(\S.*?)\s+\d+\s+' + F + r'\s+' + F + r'\s+\S+%\s+\d+\s+\S+\s+\S+\s+\S+\s*$')
HDR_SUBMIT = re.compile(r'^variant\s+min ms\s+median ms\s')
ROW_SUBMIT = re.compile(r'^(\S.*?)\s+' + r'\s+'.join([F] * 3) + r'\s+\d+\s+' + F + r'\s+' + F +
                        r'\s+' + r'\s+'.join([F] * 3) + r'\s+\S+\s*$')
HDR_WAKE = re.compile(r'^variant\s+min\s+p50\s+p90\s+p99\s+max\s+reps\s*$')
ROW_WAKE = re.compile(r'^(\S.*?)\s+' + F + r'\s+' + F + r'\s+' + r'\s+'.join([F] * 3) + r'\s+\d+\s*$')
ROW_IDLE = re.compile(r'^(\S.*?)\s+' + F + r' ms CPU in ' + F + r' s = ' + F + r'% of a core\s*$')
HDR_NEIGH = re.compile(r'^variant\s+p50 us\s+p99 us\s+jobs/s\s+spin M/s\s*$')
HDR_PROF = re.compile(r'^program\s+P\s+off\s+on\s+on / off\s')
CELL = F + r'x? \[\s*' + F + r',\s*' + F + r'\]'
ROW_PROF = re.compile(r'^(\S.*?)\s+(\d+)\s+' + CELL + r'\s+' + CELL + r'\s+' + CELL + r'(\s.*)?$')
HDR_KNAP = re.compile(r'^variant\s+time\s+/ Ts\s*$')
ROW_KNAP = re.compile(r'^(\S.*?)\s+' + CELL + r'\s+' + F + r'\s*$')
HDR_CREATE = re.compile(r'^\s+P\s+plain threads\s+wspool\s+wspool / threads\s*$')
ROW_CREATE = re.compile(r'^\s+(\d+)\s+' + CELL + r'\s+' + CELL + r'\s+' + CELL + r'\s*$')
ROW_NEIGH = re.compile(r'^(\S.*?)' + r''.join([r'\s+' + F + r' \[' + F + r', ' + F + r'\]'] * 4) +
                       r'\s*$')
# A table's header line, and the kind of table its rows are read as.
HEADERS = [(HDR_TABLE, 'table'), (HDR_SUBMIT, 'submit'), (HDR_WAKE, 'wake'), (HDR_NEIGH, 'neigh'),
           (HDR_PROF, 'prof'), (HDR_KNAP, 'knap'), (HDR_CREATE, 'create')]


def number(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def title(text):
    return re.split(r' \(|;', text, maxsplit=1)[0].strip()[:48]


def parse(path):
    """OrderedDict: row name -> (figure, unit, higher_is_better)."""
    rows = []  # (section, name, value, unit, higher)
    section, table = '', None
    try:
        lines = open(path, encoding='utf-8', errors='replace').read().splitlines()
    except OSError:
        return OrderedDict()
    for line in lines:
        if line.startswith('== '):
            m = re.match(r'== \S+: (.*)', line)
            section, table = title(m.group(1) if m else line[3:]), None
            continue
        if line.startswith('-- '):
            section, table = title(line[3:]), None
            continue
        kind = next((k for hdr, k in HEADERS if hdr.match(line)), None)
        if kind:
            table = kind
            continue
        if not line.strip() or line.startswith('('):
            table = None
        m = ROW_IDLE.match(line)
        if m:
            rows.append(('idle CPU', m.group(1), number(m.group(4)), '% core', False))
            continue
        if table == 'table':
            m = ROW_TABLE.match(line)
            if m:
                rows.append((section, m.group(1), number(m.group(2)), 'ms', False))
        elif table == 'submit':
            m = ROW_SUBMIT.match(line)
            if m:
                rows.append(('throughput', m.group(1), number(m.group(6)), 'Mt/s', True))
        elif table == 'wake':
            m = ROW_WAKE.match(line)
            if m:
                rows.append(('wake latency p50', m.group(1), number(m.group(3)), 'us', False))
        elif table == 'prof':
            m = ROW_PROF.match(line)
            if m:
                name = f'{m.group(1)}, P {m.group(2)}'
                for sec, col, unit in (('off', 3, 's'), ('on', 6, 's'), ('on / off', 9, 'x')):
                    rows.append((sec, name, number(m.group(col)), unit, False))
        elif table == 'knap':
            m = ROW_KNAP.match(line)
            if m:
                rows.append((section, m.group(1), number(m.group(2)), 's', False))
        elif table == 'create':
            m = ROW_CREATE.match(line)
            if m:
                rows.append(('create + destroy', f'plain threads, P {m.group(1)}', number(m.group(2)), 's', False))
                rows.append(('create + destroy', f'wspool, P {m.group(1)}', number(m.group(5)), 's', False))
        elif table == 'neigh':
            m = ROW_NEIGH.match(line)
            if m:
                ratios = section.startswith('against')
                for col, (what, unit, higher) in enumerate(
                        [('p50', 'us', False), ('p99', 'us', False), ('jobs/s', 'jobs/s', True),
                         ('spin', 'M/s', True)]):
                    rows.append((('vs threads ' if ratios else 'idle ') + what, m.group(1), number(m.group(2 + 3 * col)),
                                 'x' if ratios else unit, higher))
    several = len({r[0] for r in rows}) > 1
    out = OrderedDict()
    for sec, name, value, unit, higher in rows:
        if value is None:
            continue
        key = f'{sec} / {name}' if several and sec else name
        k, n = key, 1
        while k in out:
            n += 1
            k = f'{key} #{n}'
        out[k] = (value, unit, higher)
    return out


def load(manifest):
    """prog -> {'runs': {(side, round): (rc, rows)}}, in manifest order."""
    data = OrderedDict()
    with open(manifest, encoding='utf-8') as f:
        for line in f:
            prog, rnd, side, rc, path = line.rstrip('\n').split('\t')
            rows = parse(path) if rc == '0' else OrderedDict()
            data.setdefault(prog, {})[(side, int(rnd))] = (int(rc), rows)
    return data


def ratio(old, new, higher):
    """Slowdown factor of NEW against OLD: > 1 means NEW is slower."""
    num, den = (old, new) if higher else (new, old)
    if den == 0:
        return 1.0 if num == 0 else None
    return num / den


def analyse(runs, rounds):
    """[(key, unit, old_med, new_med, ratios per round (None: no pair))]"""
    keys = OrderedDict()
    for side in ('NEW', 'OLD'):
        for r in range(1, rounds + 1):
            for k, (_, unit, higher) in runs.get((side, r), (1, {}))[1].items():
                keys.setdefault(k, (unit, higher))
    result = []
    for k, (unit, higher) in keys.items():
        olds, news, ratios = [], [], []
        for r in range(1, rounds + 1):
            o = runs.get(('OLD', r), (1, {}))[1].get(k)
            n = runs.get(('NEW', r), (1, {}))[1].get(k)
            if o:
                olds.append(o[0])
            if n:
                news.append(n[0])
            ratios.append(ratio(o[0], n[0], higher) if o and n else None)
        result.append((k, unit, statistics.median(olds) if olds else None,
                       statistics.median(news) if news else None, ratios))
    return result


def stats(ratios):
    got = [x for x in ratios if x is not None]
    if not got:
        return None
    return statistics.median(got), min(got), max(got), len(got)


def judge(st, threshold):
    if st is None:
        return 'NO PAIRS'
    med = st[0]
    if med > 1 + threshold / 100:
        return 'SLOWER'
    if med < 1 - threshold / 100:
        return 'faster'
    return 'ok'


def fmt(v, spec):
    return '-' if v is None else format(v, spec)


def failures(prog, runs):
    out = []
    for (side, r), (rc, rows) in sorted(runs.items(), key=lambda x: (x[0][1], x[0][0])):
        if rc == 124 or rc == 137:
            out.append(f'{prog}: {side} round {r} timed out (exit {rc})')
        elif rc:
            out.append(f'{prog}: {side} round {r} exited {rc} (wrong answer or crash)')
        elif not rows:
            out.append(f'{prog}: {side} round {r}: no row could be read from its output')
    return out


def table(prog, runs, rounds, threshold):
    rows = analyse(runs, rounds)
    print(f'\n== {prog}: {rounds} round(s); per round the paired slowdown of NEW against OLD '
          f'(> 1 = NEW slower: NEW/OLD for ms, us, % core; OLD/NEW for Mt/s)')
    if not rows:
        print('   (no rows read)')
    for f in failures(prog, runs):
        print(f'   WARNING: {f}')
    if not rows:
        return
    w = max([len(r[0]) for r in rows] + [3])
    head = f'{"row":<{w}} {"unit":>6} {"OLD":>10} {"NEW":>10} |'
    head += ''.join(f' {"r" + str(i):>6}' for i in range(1, rounds + 1))
    head += f' | {"median":>6} {"min":>6} {"max":>6}  verdict'
    print(head)
    for key, unit, om, nm, ratios in rows:
        st = stats(ratios)
        line = f'{key:<{w}} {unit:>6} {fmt(om, "10.4g")} {fmt(nm, "10.4g")} |'
        line += ''.join(f' {fmt(x, "6.3f")}' for x in ratios)
        if st:
            line += f' | {st[0]:6.3f} {st[1]:6.3f} {st[2]:6.3f}  {judge(st, threshold)}'
        else:
            line += f' | {"-":>6} {"-":>6} {"-":>6}  {judge(st, threshold)}'
        print(line)


def verdict(data, rounds, threshold):
    print(f'\n== verdict per row: median over rounds of the paired slowdown NEW against OLD, '
          f'flagged SLOWER above +{threshold:g} %')
    total, slower, nopairs, warnings = 0, [], [], []
    for prog, runs in data.items():
        warnings += failures(prog, runs)
        for key, unit, om, nm, ratios in analyse(runs, rounds):
            total += 1
            name = f'{prog} / {key}'
            st = stats(ratios)
            word = judge(st, threshold)
            if st is None:
                nopairs.append(name)
                side = 'OLD only' if nm is None else 'NEW only' if om is None else 'no round has both'
                print(f'  {"[" + word + "]":<10} {name}: {side}')
                continue
            if word == 'SLOWER':
                slower.append(name)
            print(f'  {"[" + word + "]":<10} {name}: median {100 * (st[0] - 1):+.1f} % '
                  f'(min {100 * (st[1] - 1):+.1f} %, max {100 * (st[2] - 1):+.1f} %, '
                  f'{st[3]} pair{"s" if st[3] != 1 else ""})'
                  + (f'  > +{threshold:g} %' if word == 'SLOWER' else ''))
    for w in warnings:
        print(f'  WARNING: {w}')
    if slower:
        line = f'verdict: {len(slower)} of {total} rows more than {threshold:g} % slower'
        line += ' (median paired ratio): '
        line += '; '.join(slower) if len(slower) <= 8 else 'see the [SLOWER] lines above'
    else:
        line = f'verdict: no row more than {threshold:g} % slower (median paired ratio, {total} rows)'
    if nopairs:
        line += f'; {len(nopairs)} row(s) without pairs'
    if warnings:
        line += f'; {len(warnings)} failed or unreadable run(s)'
    print(line)


def main():
    mode, manifest, threshold, rounds = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    data = load(manifest)
    if mode == 'table':
        prog = sys.argv[5]
        table(prog, data.get(prog, {}), rounds, threshold)
    else:
        verdict(data, rounds, threshold)


main()
PY

# ---- runs -------------------------------------------------------------------

manifest="$run_dir/manifest.tsv"
: >"$manifest"
mkdir -p "$run_dir/out"

# run_one SIDE PROG ROUND: one run of SIDE's PROG; appends to the manifest.
run_one() {
  local side="$1" prog="$2" r="$3" out rc=0 t0 t1
  out="$run_dir/out/$prog.$side.$r"
  local cmd=("$run_dir/$side/build/bench/$prog")
  if ((run_timeout > 0)); then cmd=(timeout -k 10 "$run_timeout" "${cmd[@]}"); fi
  t0="$(date +%s.%N)"
  (cd "$run_dir" && "${cmd[@]}") >"$out.out" 2>"$out.err" || rc=$?
  t1="$(date +%s.%N)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$prog" "$r" "$side" "$rc" "$out.out" >>"$manifest"
  awk -v s="$side" -v a="$t0" -v b="$t1" -v rc="$rc" \
    'BEGIN { printf " %s %.1fs%s", s, b - a, rc == 0 ? "" : " (exit " rc ")" }' >&2
}

printf 'OLD: %s\nNEW: %s\n' "$old_desc" "$new_desc"
for p in "${new_patches[@]}"; do printf 'NEW patched with %s\n' "${p#"$top"/}"; done
if ((${#new_opts[@]})); then printf 'NEW built with %s\n' "${new_opts[*]}"; fi
printf 'benchmarks: %s; %s rounds; threshold %s %%; peers %s\n' "${progs[*]}" "$rounds" \
  "$threshold" "$peers"
env_line="$(env | grep '^WSPOOL_' | sort | paste -sd ' ' - || true)"
if [[ -z $env_line ]]; then env_line='no WSPOOL_* variables (the defaults of the programs)'; fi
printf 'environment: %s\n' "$env_line"
uptime
read -r load1 _ </proc/loadavg || load1=0
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  printf 'WARNING: 1-minute load average %s is above 0.5: the machine is busy, figures will be noisy\n' \
    "$load1"
fi

for prog in "${progs[@]}"; do
  for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order=(OLD NEW); else order=(NEW OLD); fi
    printf '%s round %d/%d:' "$prog" "$r" "$rounds" >&2
    for side in "${order[@]}"; do
      run_one "$side" "$prog" "$r"
    done
    printf '\n' >&2
  done
  python3 "$report_py" table "$manifest" "$threshold" "$rounds" "$prog"
done

python3 "$report_py" verdict "$manifest" "$threshold" "$rounds"
printf 'after the runs: '
uptime
exit 0
