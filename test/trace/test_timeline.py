#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""wspool-timeline (runtime/tools/wspool-timeline) on real and synthetic traces.

  test_timeline.py TOOL [APP]

APP is timeline_app, a program of known work on 2 workers; without it (a
cross build) the real-trace cases are skipped. Every figure the tool gives
is compared with the same figure recomputed here from the trace's events,
exactly (durations to the trace's resolution, 0.001 us, plus rounding).
In every case each lane's marks lie inside it and draw each of its tasks,
sleeps and steals once (a bar of its own, or counted in a bin's title).
Cases:
  real_trace       the program's trace (its task count, at least one steal,
                   a sleep per worker): one lane per worker, per-lane task,
                   steal and sleep counts equal to the trace's, utilisation
                   within [0, 1], busy time = the union of the task slices,
                   the table on stdout agrees; the default output name;
                   --text-only writes no SVG
  truncated        the same trace without its ']', and cut inside its last
                   event: read, with a warning, the cut event dropped
  nested           nested slices count their time once and draw thinner
  profile          a wspool_profile event: parallelism, burdened
                   parallelism, mean task and the speedup bounds
  pools            two pools: lanes grouped per pool; --pool filters; a
                   worker whose buffer filled is marked
  empty            a trace with no events: no lanes, exit 0; workers that
                   recorded nothing: their lanes, all zero
  large            50 000 tiny tasks, 50 000 steals, 5 000 sleeps: exact
                   counts, each drawn once (binned), SVG size bounded
  bad_input        garbage, wrong JSON, bad fields, missing file, bad
                   options: exit 2, a message, no traceback
Exit status 0 when every case passes, 1 otherwise."""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = '{http://www.w3.org/2000/svg}'
TOOL = None
APP = None
TMP = None
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f'  FAILED: {what}', file=sys.stderr)
    return cond


def run_tool(*args, expect=0):
    # -S: without site-packages, which also shows the tool needs only the
    # standard library (and saves the start-up of what a site installs).
    p = subprocess.run([sys.executable, '-S', TOOL, *args], capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == expect,
          f'{args}: exit {p.returncode}, expected {expect}; stderr: {p.stderr.strip()}')
    check('Traceback' not in p.stderr, f'{args}: a Python traceback: {p.stderr}')
    return p


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, 'w' if isinstance(text, str) else 'wb') as f:
        f.write(text)
    return path


def events_text(events, close=True):
    """A trace laid out the way runtime/trace.c writes it."""
    body = '['
    for i, ev in enumerate(events):
        body += ('\n' if i == 0 else ',\n') + json.dumps(ev, separators=(',', ':'))
    return body + ('\n]\n' if close else '\n')


def meta(pid, tid, name):
    ev = {'name': 'thread_name', 'ph': 'M', 'pid': pid, 'args': {'name': name}}
    if tid is None:
        ev['name'] = 'process_name'
    else:
        ev['tid'] = tid
    return ev


def task(pid, tid, ts, dur, name='fn'):
    return {'name': name, 'cat': 'task', 'ph': 'X', 'pid': pid, 'tid': tid, 'ts': ts, 'dur': dur}


def sleep(pid, tid, ts, dur):
    return {'name': 'sleep', 'cat': 'sleep', 'ph': 'X', 'pid': pid, 'tid': tid, 'ts': ts,
            'dur': dur}


def steal(pid, tid, ts, victim):
    return {'name': 'steal', 'cat': 'steal', 'ph': 'i', 's': 't', 'pid': pid, 'tid': tid,
            'ts': ts, 'args': {'victim': victim}}


# ---- the figures, recomputed from the events -------------------------------------

def expected(events):
    """Per (pid, tid): name, tasks, steals, sleeps, busy (union of task
    slices), sleep time; per pid: span (first event to last end)."""
    lanes, spans = {}, {}

    def lane(ev):
        return lanes.setdefault((ev['pid'], ev['tid']),
                                {'name': f'tid {ev["tid"]}', 'tasks': [], 'steals': 0,
                                 'sleeps': 0, 'sleep': 0.0})

    def extend(pid, a, b):
        lo, hi = spans.get(pid, (a, b))
        spans[pid] = (min(lo, a), max(hi, b))

    for ev in events:
        if ev.get('ph') == 'M' and ev.get('name') == 'thread_name':
            lane(ev)['name'] = ev['args']['name']
        elif ev.get('ph') == 'X' and ev.get('cat') == 'task':
            lane(ev)['tasks'].append((ev['ts'], ev['ts'] + ev['dur']))
            extend(ev['pid'], ev['ts'], ev['ts'] + ev['dur'])
        elif ev.get('ph') == 'X' and ev.get('cat') == 'sleep':
            lane(ev)['sleeps'] += 1
            lane(ev)['sleep'] += ev['dur']
            extend(ev['pid'], ev['ts'], ev['ts'] + ev['dur'])
        elif ev.get('ph') == 'i' and ev.get('cat') == 'steal':
            lane(ev)['steals'] += 1
            extend(ev['pid'], ev['ts'], ev['ts'])
    for ln in lanes.values():
        busy, cur = 0.0, None
        for s, e in sorted(ln['tasks']):
            if cur is None or s > cur[1]:
                if cur:
                    busy += cur[1] - cur[0]
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        if cur:
            busy += cur[1] - cur[0]
        ln['busy'] = busy
        ln['ntasks'] = len(ln['tasks'])
    return lanes, {pid: hi - lo for pid, (lo, hi) in spans.items()}


def svg_lanes(path):
    """The lanes of the SVG at path, keyed (pid, tid), in document order."""
    root = ET.parse(path).getroot()
    check(root.tag == SVG + 'svg', f'{path}: root element {root.tag}')
    lanes = {}
    order = []
    for g in root.iter(SVG + 'g'):
        if g.get('class') == 'lane':
            key = (int(g.get('data-pid')), int(g.get('data-tid')))
            check(key not in lanes, f'{path}: two lanes for {key}')
            lanes[key] = g
            order.append(key)
    return root, lanes, order


def marks(g):
    """The marks drawn in lane g: (classes, x, y, width, height, title)."""
    out = []
    for r in g.iter(SVG + 'rect'):
        t = r.find(SVG + 'title')
        out.append((r.get('class').split(), float(r.get('x')), float(r.get('y')),
                    float(r.get('width')), float(r.get('height')),
                    t.text if t is not None else ''))
    return out


def check_marks(name, key, g):
    """Every mark inside its lane, and each task, sleep and steal drawn
    once: on its own (a titled bar) or counted in a bin's title."""
    ms = marks(g)
    bg = [m for m in ms if m[0] == ['bg']]
    if not check(len(bg) == 1, f'{name} {key}: {len(bg)} lane backgrounds'):
        return
    _, bx, by, bw, bh, _ = bg[0]
    drawn = {'task': 0, 'sleep': 0, 'steal': 0}
    for cls, x, y, w, h, title in ms:
        if cls == ['bg']:
            continue
        check(bx - 0.2 <= x and x + w <= bx + bw + 0.2 and w >= 0,
              f'{name} {key}: {cls} at x {x}..{x + w} outside the lane {bx}..{bx + bw}')
        if 'full' not in cls:
            check(by <= y and y + h <= by + bh, f'{name} {key}: {cls} at y {y} outside the lane')
        kind = {'t0': 'task', 't1': 'task', 't2': 'task', 'sl': 'sleep', 'st': 'steal'}.get(cls[0])
        if kind is None:
            continue
        if 'agg' in cls or kind == 'steal':
            drawn[kind] += int(title.split()[0])
        else:
            drawn[kind] += 1
    for kind, attr in (('task', 'data-tasks'), ('sleep', 'data-sleeps'), ('steal', 'data-steals')):
        check(drawn[kind] == int(g.get(attr)),
              f'{name} {key}: {drawn[kind]} {kind}s drawn, {g.get(attr)} counted')


def check_against(name, events, svg_path, stdout, pools=None):
    """The SVG's lanes and the stdout table against the events."""
    want, spans = expected(events)
    if pools is not None:
        want = {k: v for k, v in want.items() if k[0] in pools}
    root, lanes, _ = svg_lanes(svg_path)
    check(set(lanes) == set(want), f'{name}: lanes {sorted(lanes)}, expected {sorted(want)}')
    for key, w in want.items():
        g = lanes.get(key)
        if g is None:
            continue
        check(g.get('data-name') == w['name'], f'{name} {key}: name {g.get("data-name")}')
        check_marks(name, key, g)
        for attr, val in (('data-tasks', w['ntasks']), ('data-steals', w['steals']),
                          ('data-sleeps', w['sleeps'])):
            check(int(g.get(attr)) == val, f'{name} {key}: {attr} {g.get(attr)}, expected {val}')
        busy, sleep_us = float(g.get('data-busy-us')), float(g.get('data-sleep-us'))
        util = float(g.get('data-utilisation'))
        check(abs(busy - w['busy']) <= 0.002, f'{name} {key}: busy {busy}, expected {w["busy"]}')
        check(abs(sleep_us - w['sleep']) <= 0.002 + 1e-9 * w['sleep'],
              f'{name} {key}: sleep {sleep_us}, expected {w["sleep"]}')
        check(0.0 <= util <= 1.0, f'{name} {key}: utilisation {util} outside [0, 1]')
        span = spans.get(key[0], 0.0)
        if span > 0:
            check(abs(util - w['busy'] / span) <= 1e-5,
                  f'{name} {key}: utilisation {util}, expected {w["busy"] / span}')
        # The table row: name, utilisation %, busy (value, unit), tasks,
        # steals, sleep (value, unit).
        rows = [ln for ln in table_rows(stdout, key[0]) if ln.startswith(w['name'] + ' ')]
        if check(len(rows) == 1, f'{name} {key}: {len(rows)} table rows for {w["name"]!r}'):
            cols = rows[0][len(w['name']):].split()
            pct = float(cols[0].rstrip('%'))
            check(0.0 <= pct <= 100.0, f'{name} {key}: table utilisation {cols[0]}')
            check(int(cols[3]) == w['ntasks'] and int(cols[4]) == w['steals'],
                  f'{name} {key}: table row {rows[0]!r}')
    return root, lanes


def table_rows(stdout, pid):
    """The worker rows of pool pid's table (stripped)."""
    rows, inside = [], False
    for line in stdout.splitlines():
        if line.startswith('pool '):
            inside = line.startswith(f'pool {pid}:')
        elif inside and line.startswith('  ') and not line.startswith('   '):
            rows.append(line.strip())
    return rows


# ---- cases -------------------------------------------------------------------------

def case_real_trace():
    if APP is None:
        print('  skipped: no program to trace (cross build)')
        return None
    trace = os.path.join(TMP, 'app.json')
    p = subprocess.run([APP, trace], capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, f'timeline_app: exit {p.returncode}: {p.stderr}'):
        return None
    ntasks = int(p.stdout.strip().split('=')[1])
    with open(trace) as f:
        events = json.load(f)
    want, _ = expected(events)
    workers = {(e['pid'], e['tid']) for e in events
               if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    check(len(workers) == 2, f'real_trace: {len(workers)} workers in the trace, expected 2')
    check(sum(w['ntasks'] for w in want.values()) == ntasks,
          f'real_trace: {sum(w["ntasks"] for w in want.values())} task slices, expected {ntasks}')
    # The program forces a steal and puts every worker to sleep.
    check(sum(w['steals'] for w in want.values()) >= 1, 'real_trace: no steal in the trace')
    check(all(w['sleeps'] >= 1 for w in want.values()), 'real_trace: a worker never slept')
    out = os.path.join(TMP, 'app.svg')
    r = run_tool(trace, '-o', out)
    _, lanes = check_against('real_trace', events, out, r.stdout)
    check(len(lanes) == len(workers), f'real_trace: {len(lanes)} lanes for {len(workers)} workers')
    # The default output: the trace's name with .svg.
    os.unlink(out)
    run_tool(trace)
    check(os.path.exists(os.path.join(TMP, 'app.svg')), 'real_trace: no app.svg by default')
    os.unlink(out)
    t = run_tool(trace, '--text-only')
    check(not os.path.exists(out), 'real_trace: --text-only wrote an SVG')
    check(t.stdout == r.stdout, 'real_trace: --text-only printed another table')
    return trace


def case_real_profile():
    """WSPOOL_PROFILE=1 with the trace: the runtime's own profile event, in
    the form the tool reads, consistent with itself and printed by both."""
    if APP is None:
        print('  skipped: no program to trace (cross build)')
        return
    trace = os.path.join(TMP, 'prof.json')
    env = dict(os.environ, WSPOOL_PROFILE='1')
    p = subprocess.run([APP, trace], capture_output=True, text=True, timeout=120, env=env)
    if not check(p.returncode == 0, f'real_profile: exit {p.returncode}: {p.stderr}'):
        return
    check('wspool: profile of pool' in p.stderr, f'real_profile: no report on stderr {p.stderr!r}')
    with open(trace) as f:
        events = json.load(f)
    prof = [e for e in events if e.get('name') == 'wspool_profile']
    if not check(len(prof) == 1, f'real_profile: {len(prof)} profile events'):
        return
    a = prof[0]['args']
    check(0 < a['span_ns'] <= a['work_ns'] * 1.000001, f'real_profile: span/work {a}')
    check(a['burdened_span_ns'] >= a['span_ns'], f'real_profile: burdened span {a}')
    check(a['tasks'] >= 1, f'real_profile: tasks {a}')
    r = run_tool(trace, '--text-only')
    check('parallelism (work/span)' in r.stdout, f'real_profile: not printed:\n{r.stdout}')


def case_truncated(trace):
    if trace is None:
        print('  skipped: no real trace')
        return
    with open(trace) as f:
        text = f.read()
    events = json.loads(text)
    # The program died before exit: no closing bracket.
    check(text.endswith('\n]\n'), 'truncated: the trace does not end in "]"')
    open_path = write('open.json', text[:-3])
    r = run_tool(open_path, '-o', os.path.join(TMP, 'open.svg'))
    check('no closing "]"' in r.stderr, f'truncated: no warning for the missing "]": {r.stderr}')
    check_against('truncated-open', events, os.path.join(TMP, 'open.svg'), r.stdout)
    # Cut inside the last event: the complete events are read, the cut one dropped.
    lines = text[:-3].split('\n')
    cut_path = write('cut.json', '\n'.join(lines[:-1]) + '\n' + lines[-1][:len(lines[-1]) // 2])
    r = run_tool(cut_path, '-o', os.path.join(TMP, 'cut.svg'))
    check('cut short' in r.stderr, f'truncated: no warning for the cut event: {r.stderr}')
    check_against('truncated-cut', events[:-1], os.path.join(TMP, 'cut.svg'), r.stdout)


def case_nested():
    # A task of 10 us that runs two others inside it (a sync running its
    # children on the same worker), then a task of 10 us: 20 us busy, not
    # 26; written inner first, as the runtime records them (at their end).
    events = [meta(1, None, 'wspool pool 1 (1 workers)'), meta(1, 0, 'worker 0'),
              task(1, 0, 102.0, 3.0, 'inner'), task(1, 0, 103.0, 1.0, 'innermost'),
              task(1, 0, 106.0, 3.0, 'inner'), task(1, 0, 100.0, 10.0, 'outer'),
              task(1, 0, 120.0, 10.0, 'next'), sleep(1, 0, 110.0, 10.0)]
    path = write('nested.json', events_text(events))
    out = os.path.join(TMP, 'nested.svg')
    r = run_tool(path, '-o', out)
    root, lanes = check_against('nested', events, out, r.stdout)
    g = lanes.get((1, 0))
    if g is not None:
        check(float(g.get('data-busy-us')) == 20.0, f'nested: busy {g.get("data-busy-us")}')
        check(abs(float(g.get('data-utilisation')) - 2 / 3) < 1e-6,
              f'nested: utilisation {g.get("data-utilisation")}, expected 20/30')
        # outer and next at the top level, the two inner ones nested, the
        # innermost one level deeper, each a bar of its own; one sleep.
        bars = sorted((m[0][0], m[5].split(':')[0]) for m in marks(g)
                      if m[0][0] != 'bg' and 'agg' not in m[0])
        check(bars == [('sl', 'sleep 10.000 us at 110.000 us'), ('t0', 'next'),
                       ('t0', 'outer'), ('t1', 'inner'), ('t1', 'inner'), ('t2', 'innermost')],
              f'nested: bars {bars}')
        heights = {m[0][0]: m[4] for m in marks(g)}
        check(heights['t0'] > heights['t1'] > heights['t2'], f'nested: bar heights {heights}')


def case_profile():
    events = [meta(1, None, 'wspool pool 1 (2 workers)'), meta(1, 0, 'worker 0'),
              meta(1, 1, 'worker 1'), task(1, 0, 0.0, 5.0), task(1, 1, 1.0, 3.0),
              {'name': 'wspool_profile', 'ph': 'M', 'pid': 1,
               'args': {'work_ns': 1e9, 'span_ns': 1e7, 'tasks': 1000,
                        'burdened_span_ns': 2e7}}]
    path = write('profile.json', events_text(events))
    out = os.path.join(TMP, 'profile.svg')
    r = run_tool(path, '-o', out)
    # work/span = 100, work/burdened span = 50, mean task 1 ms; on 64
    # workers at most min(64, 100), at least 1/(1/64 + 1/100) = 39.02 and
    # with the burdened span 1/(1/64 + 1/50) = 28.07.
    for text in ('parallelism (work/span) 100.00', 'burdened parallelism (work/burdened span) 50.00',
                 'mean task 1.000 ms', 'tasks 1000'):
        check(text in r.stdout, f'profile: {text!r} not printed:\n{r.stdout}')
    rows = {int(ln.split()[0]): ln.split()[1:] for ln in r.stdout.splitlines()
            if ln.strip() and ln.split()[0].isdigit()}
    check(rows.get(64) == ['64.00', '39.02', '28.07'], f'profile: P=64 row {rows.get(64)}')
    check(rows.get(2) == ['2.00', '1.96', '1.92'], f'profile: P=2 row {rows.get(2)}')
    check(sorted(rows) == [2, 4, 8, 16, 64], f'profile: rows for P {sorted(rows)}')
    root, _ = check_against('profile', events, out, r.stdout)
    blocks = [g for g in root.iter(SVG + 'g') if g.get('class') == 'profile']
    if check(len(blocks) == 1, f'profile: {len(blocks)} profile blocks in the SVG'):
        check(float(blocks[0].get('data-parallelism')) == 100.0, 'profile: SVG parallelism')
        text = ' '.join(t.text or '' for t in blocks[0].iter(SVG + 'text'))
        check('parallelism (work/span) 100.00' in text, f'profile: SVG text {text!r}')
    # Without a profile, none is printed or drawn.
    path = write('noprofile.json', events_text(events[:-1]))
    r = run_tool(path, '-o', out)
    check('parallelism' not in r.stdout, 'profile: a summary printed without a profile')
    # A malformed profile is bad input.
    bad = dict(events[-1], args={'work_ns': 1e9, 'span_ns': 0})
    r = run_tool(write('badprofile.json', events_text(events[:-1] + [bad])), expect=2)
    check('span_ns' in r.stderr, f'profile: bad span_ns message {r.stderr!r}')


def case_pools():
    events = [meta(1, None, 'wspool pool 1 (2 workers)'), meta(1, 0, 'worker 0'),
              meta(1, 1, 'worker 1'), meta(2, None, 'wspool pool 2 (3 workers)'),
              meta(2, 0, 'worker 0'), meta(2, 1, 'worker 1'), meta(2, 2, 'worker 2'),
              task(1, 0, 0.0, 4.0), task(1, 1, 1.0, 2.0), steal(1, 1, 1.0, 0),
              task(2, 0, 10.0, 4.0), task(2, 0, 15.0, 4.0), task(2, 2, 11.0, 1.0),
              steal(2, 2, 11.0, 0), sleep(2, 1, 10.0, 9.0),
              {'name': 'trace buffer full: recording stopped', 'ph': 'i', 's': 't', 'pid': 2,
               'tid': 0, 'ts': 19.0}]
    path = write('pools.json', events_text(events))
    out = os.path.join(TMP, 'pools.svg')
    r = run_tool(path, '-o', out)
    root, lanes = check_against('pools', events, out, r.stdout)
    # The worker whose buffer filled: marked in the table, the lane and a warning.
    check('pool 2 worker 0: trace buffer full' in r.stderr, f'pools: warning {r.stderr!r}')
    check([ln for ln in table_rows(r.stdout, 2) if ln.endswith(' *')] == [
        ln for ln in table_rows(r.stdout, 2) if ln.startswith('worker 0 ')],
        f'pools: buffer-full mark in\n{r.stdout}')
    full = [m for key, g in lanes.items() for m in marks(g) if m[0] == ['full']]
    check(len(full) == 1 and 'full' in full[0][5], f'pools: buffer-full marks {full}')
    _, _, order = svg_lanes(out)
    check(order == [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)], f'pools: lane order {order}')
    r = run_tool(path, '-o', out, '--pool', '2')
    check_against('pools --pool 2', events, out, r.stdout, pools={2})
    check('pool 1:' not in r.stdout, 'pools: --pool 2 printed pool 1')
    r = run_tool(path, '-o', out, '--pool', '3', expect=2)
    check('no pool 3' in r.stderr, f'pools: --pool 3 message {r.stderr!r}')


def case_empty():
    for name, text in (('empty1.json', '['), ('empty2.json', '[\n]\n'), ('empty3.json', '[]')):
        out = os.path.join(TMP, name + '.svg')
        r = run_tool(write(name, text), '-o', out)
        check('no pools' in r.stdout, f'empty {name}: table {r.stdout!r}')
        _, lanes, _ = svg_lanes(out)
        check(not lanes, f'empty {name}: lanes {lanes}')
    # Workers named but that recorded nothing: their lanes, all zero.
    events = [meta(1, None, 'wspool pool 1 (2 workers)'), meta(1, 0, 'worker 0'),
              meta(1, 1, 'worker 1')]
    out = os.path.join(TMP, 'idle.svg')
    r = run_tool(write('idle.json', events_text(events)), '-o', out)
    check_against('empty idle', events, out, r.stdout)


def case_large():
    # 25 000 tiny tasks, 25 000 steals and 2 500 tiny sleeps on each of 2
    # workers: too many to draw one by one, so binned; the counts stay exact.
    n = 25000
    parts = ['[', json.dumps(meta(1, None, 'wspool pool 1 (2 workers)')) + ',']
    for tid in (0, 1):
        parts.append(json.dumps(meta(1, tid, f'worker {tid}')) + ',')
        parts.extend(json.dumps(task(1, tid, i * 0.5, 0.25)) + ',\n' +
                     json.dumps(steal(1, tid, i * 0.5 + 0.3, 1 - tid)) + ',' for i in range(n))
        parts.extend(json.dumps(sleep(1, tid, i * 0.5 + 0.26, 0.2)) + ','
                     for i in range(0, n, 10))
    parts.append(json.dumps(task(1, 0, n * 0.5, 1000.0)))
    parts.append(']')
    path = write('large.json', '\n'.join(parts))
    out = os.path.join(TMP, 'large.svg')
    r = run_tool(path, '-o', out)
    _, lanes, _ = svg_lanes(out)
    for tid, tasks in ((0, n + 1), (1, n)):
        g = lanes.get((1, tid))
        if check(g is not None, f'large: no lane for worker {tid}'):
            check(int(g.get('data-tasks')) == tasks and int(g.get('data-steals')) == n and
                  int(g.get('data-sleeps')) == n // 10,
                  f'large: worker {tid} counts {g.get("data-tasks")}, {g.get("data-steals")}, '
                  f'{g.get("data-sleeps")}')
            check_marks('large', (1, tid), g)
            ms = marks(g)
            check(len(ms) <= 3000, f'large: worker {tid} has {len(ms)} rects')
            # Each bin is half covered (0.25 us tasks every 0.5 us), but
            # for the partly covered bins at the ends.
            widths = {}
            for el in g.iter(SVG + 'rect'):
                if el.get('class').split() == ['t0', 'agg']:
                    op = el.get('fill-opacity')
                    widths[op] = widths.get(op, 0.0) + float(el.get('width'))
            check(widths.get('0.50', 0.0) >= 0.95 * sum(widths.values()),
                  f'large: bin widths by opacity {widths}')
    size = os.path.getsize(out)
    check(size < 1 << 20, f'large: SVG of {size} bytes for {4 * n} events')
    check(f'{n + 1}' in r.stdout, 'large: table')


def case_bad_input():
    deep = '[' * 100000
    cases = {
        'garbage.json': b'\x7fELF\x02\x01\x01\x00\x00\xff\xfe garbage',
        'text.json': 'hello, world\n',
        'number.json': '42\n',
        'object.json': '{"events": []}\n',
        'zero.json': '',
        'scalars.json': '[\n1,\n2\n]\n',
        'badts.json': events_text([task(1, 0, 'soon', 1.0)]),
        'negdur.json': events_text([task(1, 0, 1.0, -1.0)]),
        'badpid.json': events_text([task('one', 0, 1.0, 1.0)]),
        'middle.json': '[\n' + json.dumps(task(1, 0, 1.0, 1.0)) + ',\n{"name": oops\n' +
                       json.dumps(task(1, 0, 2.0, 1.0)) + '\n]\n',
        'deep.json': deep,
        'after.json': '[\n]\n' + json.dumps(task(1, 0, 1.0, 1.0)) + '\n',
    }
    for name, text in cases.items():
        path = write(name, text)
        r = run_tool(path, '-o', os.path.join(TMP, 'bad.svg'), expect=2)
        check(r.stderr.startswith('wspool-timeline: ') and path in r.stderr,
              f'bad_input {name}: message {r.stderr!r}')
        check(r.stdout == '', f'bad_input {name}: printed {r.stdout!r}')
    run_tool(os.path.join(TMP, 'missing.json'), expect=2)
    ok = write('ok.json', '[]')
    run_tool(ok, '-o', os.path.join(TMP, 'no-such-dir', 'x.svg'), expect=2)
    run_tool(ok, '--width', '10', expect=2)
    run_tool(ok, '--pool', 'x', expect=2)
    run_tool('--no-such-option', expect=2)
    h = run_tool('--help')
    for opt in ('-o', '--width', '--pool', '--text-only'):
        check(opt in h.stdout, f'--help does not document {opt}')


def main(argv):
    global TOOL, APP, TMP
    if len(argv) not in (2, 3):
        print('usage: test_timeline.py TOOL [APP]', file=sys.stderr)
        return 2
    TOOL = argv[1]
    APP = argv[2] if len(argv) == 3 else None
    with open(TOOL) as f:
        check(f.readline() == '#!/usr/bin/env python3\n', 'the tool has no python3 shebang')
    check(os.access(TOOL, os.X_OK), 'the tool is not executable')
    with tempfile.TemporaryDirectory(prefix='wspool-timeline-') as TMP:
        print('real_trace')
        trace = case_real_trace()
        for case in (case_truncated,):
            print(case.__name__[5:])
            case(trace)
        for case in (case_real_profile, case_nested, case_profile, case_pools, case_empty, case_large,
                     case_bad_input):
            print(case.__name__[5:])
            case()
    print(f'{len(failures)} failure(s)' if failures else 'all cases passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
