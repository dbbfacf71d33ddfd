#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The runtime's layers point down (docs/design.md 1.1).

Every file of runtime/ has a layer in LAYERS (0 primitives, 1 scheduler,
2 API); the public headers of include/ (wspool.h, wspool/inline.h,
wspool_typed.h, wspool.hpp) are layer 1: the scheduler shares their types
with callers (struct pool holds a pool_config_t; the thread block of the
inline fast paths, pool__tls, is the scheduler's), so layer 0 may not
include them. Checked:

1. The table: no .c, .h or .S file of runtime/ is missing from it (a new
   file must be given its layer).
2. Includes: a file includes, as "x.h" or <x.h>, only headers of its own
   layer or a lower one; a quoted include names a runtime or a public
   header; an angle include naming neither is a system header, ignored.
3. Header include cycles: the includes among runtime/'s files form none.
4. Symbols (needs the build root): the objects of the runtime's static
   library (<build>/runtime/libwspool_internal.a, a thin archive of
   libwspool_internal.a.p/*.o; the archive, not the directory, so an
   object a removed source left behind is not read), listed with nm -P.
   An object's undefined symbol that another runtime object defines
   (functions and data alike: split.c writing ws__self, which worker.c
   defines, makes split.c use worker.c) is an edge "A uses B"; symbols no
   runtime object defines (libc, hwloc) are ignored. Every edge points to
   the same layer or a lower one.
5. Header names (same symbols): a runtime header names (declares, or
   calls in inline code or macros) no symbol that a file of a higher layer
   than its own defines.
6. Call cycles: the edges of 4 form no cycle between files; each
   elementary cycle is printed (a 2-cycle names the pair).

4-6 are skipped, with a note, when nm cannot read the objects: an LTO build
whose objects hold only compiler IR and an nm without the LTO plugin (GNU
nm loads it from bfd-plugins by itself, and then reads the IR's symbols),
or a cross build's objects that the given nm does not know. What a build
compiles decides what is checked there: debug_checks builds define and
call ws_debug_fail, release builds do not.

Every problem is printed, then a summary line; exit status 1 on any problem.
Arguments: the source root, the build root (optional: without it 4-6 are
skipped), the nm to use (optional, default nm; meson passes the one it
finds for the host machine)."""
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

LAYERS = {
    # 0: primitives that know no pool
    'atomics.h': 0, 'task.h': 0, 'debug.h': 0, 'deque.h': 0, 'deque.c': 0,
    'gqueue.h': 0, 'gqueue.c': 0, 'sleep.h': 0, 'sleep.c': 0, 'nodes.h': 0,
    'nodes.c': 0, 'trace.h': 0, 'visitors.h': 0, 'visitors.c': 0,
    'fence.h': 0, 'fence.c': 0, 'debug.c': 0, 'chaos.h': 0, 'chaos.c': 0,
    'cancel.h': 0, 'cancel.c': 0, 'busy.h': 0, 'busy.c': 0, 'mem.h': 0, 'mem.c': 0,
    'count.h': 0, 'count.c': 0,
    # 1: the scheduler (hooks.h: the hook state struct pool holds)
    'hooks.h': 1, 'scheduler.h': 1, 'split.h': 1, 'split.c': 1, 'worker.c': 1,
    'submit.c': 1, 'latch.h': 1, 'latch.c': 1, 'profile.h': 1,
    # 2: the API
    'api.h': 2, 'options.h': 2, 'options.c': 2, 'forkjoin.c': 2, 'parfor.c': 2,
    'pool.c': 2, 'stats.c': 2, 'trace.c': 2, 'placement.c': 2, 'hooks.c': 2,
    'cpu.c': 2, 'tramp.S': 2, 'dump.c': 2, 'standin.c': 2, 'job.h': 2, 'job.c': 2,
    'fstack.c': 2, 'profile.c': 2,
}
PUBLIC_LAYER = 1
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.M)
# Comments, string and character literals: not names a header uses.
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
IDENT = re.compile(r'[A-Za-z_]\w*')
MAX_CYCLES = 50  # per strongly connected component


def layer_name(name):
    layer = LAYERS.get(name)
    return f'{name} (layer {layer})' if layer is not None else f'{name} (no layer)'


def check_table(files):
    return [f'{name}: not in the layer table of {Path(__file__).name}'
            for name in files if name not in LAYERS]


def include_layer(dep, public):
    """The layer of an included header, or None for a system header."""
    if dep in LAYERS:
        return LAYERS[dep]
    if dep in public:
        return PUBLIC_LAYER
    return None


def check_includes(runtime, files, public):
    """Problems of check 2, and the include graph among runtime files."""
    errors, graph = [], {}
    for name in files:
        graph[name] = []
        for quoted, angled in INCLUDE.findall((runtime / name).read_text()):
            dep = quoted or angled
            shown = f'"{dep}"' if quoted else f'<{dep}>'
            layer = include_layer(dep, public)
            if layer is None:
                if quoted:
                    errors.append(f'{name} includes {shown}, which is not a runtime or public header')
                continue
            if dep in LAYERS:
                graph[name].append(dep)
            if name in LAYERS and layer > LAYERS[name]:
                errors.append(f'{layer_name(name)} includes {shown} (layer {layer})')
    return errors, graph


def include_cycles(graph):
    """Check 3: depth-first search, grey = on the current path."""
    errors, state = [], {}

    def visit(node, path):
        state[node] = 'grey'
        for dep in graph.get(node, []):
            if state.get(dep) == 'grey':
                errors.append('include cycle: ' + ' -> '.join(path + [node, dep]))
            elif dep in graph and dep not in state:
                visit(dep, path + [node])
        state[node] = 'black'

    for name in graph:
        if name not in state:
            visit(name, [])
    return errors


def run_nm(nm, archive):
    """nm -A -P of the archive: its lines, or None and why not."""
    try:
        out = subprocess.run([nm, '-A', '-P', str(archive)], capture_output=True, text=True)
    except OSError as e:
        return None, f'cannot run {nm}: {e.strerror}'
    if out.returncode != 0:
        first = (out.stderr.strip().splitlines() or ['no message'])[0]
        return None, f'{nm} cannot read {archive.name} ({first})'
    return out.stdout.splitlines(), None


def parse_nm(lines):
    """{symbol: {files defining it}}, {file: {undefined symbols}}.

    A line is "ARCHIVE[MEMBER]: NAME TYPE [VALUE SIZE]"; MEMBER is
    libwspool_internal.a.p/pool.c.o (thin) or pool.c.o, the file pool.c.
    Defined global symbols have an upper-case type (but U) or i, u;
    undefined ones are U, and w, v (weak)."""
    defs, undefs = defaultdict(set), defaultdict(set)
    for line in lines:
        head, _, rest = line.partition(': ')
        member = re.search(r'\[([^\]]+)\]$', head)
        fields = rest.split()
        if not member or len(fields) < 2:
            continue
        obj = member.group(1).rsplit('/', 1)[-1]
        name, kind = fields[0], fields[1]
        source = obj[:-2] if obj.endswith('.o') else obj
        if kind in 'Uwv':
            undefs[source].add(name)
        elif kind.isupper() or kind in 'iu':
            defs[name].add(source)
    return defs, undefs


def read_symbols(archive, nm):
    """(defs, undefs) of the archive's objects, or None and a note why not."""
    lines, why = run_nm(nm, archive)
    if lines is None:
        return None, f'note: {why}: symbols not checked'
    defs, undefs = parse_nm(lines)
    if any(name.startswith('__gnu_lto_') for name in defs):
        return None, (f'note: the objects hold LTO IR that {nm} does not read '
                      '(no LTO plugin): symbols not checked')
    if not defs:
        return None, f'note: {nm} finds no defined symbol in {archive.name}: symbols not checked'
    return (defs, undefs), None


def symbol_edges(defs, undefs):
    """{A: {B: [symbols A uses that B defines]}}, A != B."""
    edges = defaultdict(lambda: defaultdict(list))
    for user, names in undefs.items():
        for name in sorted(names):
            for definer in defs.get(name, ()):
                if definer != user:
                    edges[user][definer].append(name)
    return edges


def check_edge_layers(edges):
    """Check 4."""
    errors = []
    for user in sorted(edges):
        for definer in sorted(edges[user]):
            if LAYERS.get(user, 99) < LAYERS.get(definer, -1):
                errors += [f'{layer_name(user)} uses {name} of {layer_name(definer)}'
                           for name in edges[user][definer]]
    return errors


def check_header_names(runtime, files, defs):
    """Check 5."""
    errors = []
    for name in files:
        if not name.endswith('.h') or name not in LAYERS:
            continue
        code = NOT_CODE.sub(' ', (runtime / name).read_text())
        for ident in sorted(set(IDENT.findall(code)) & defs.keys()):
            for definer in sorted(defs[ident]):
                if LAYERS.get(definer, -1) > LAYERS[name]:
                    errors.append(f'{layer_name(name)} names {ident} of {layer_name(definer)}')
    return errors


def components(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.add(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(part)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def elementary_cycles(graph, part):
    """The cycles inside `part`, each once, from its alphabetically first file."""
    cycles = []

    def extend(start, path):
        for nxt in sorted(graph[path[-1]]):
            if len(cycles) > MAX_CYCLES:
                return
            if nxt == start:
                cycles.append(path + [start])
            elif nxt in part and nxt > start and nxt not in path:
                extend(start, path + [nxt])

    for start in sorted(part):
        extend(start, [start])
    return cycles


def call_cycles(edges):
    """Check 6."""
    errors = []
    for part in components(edges):
        cycles = elementary_cycles(edges, part)
        for cycle in cycles[:MAX_CYCLES]:
            via = '; '.join(f'{a} uses ' + ', '.join(edges[a][b][:3]) +
                            (', ...' if len(edges[a][b]) > 3 else '')
                            for a, b in zip(cycle, cycle[1:]))
            errors.append('call cycle: ' + ' -> '.join(cycle) + f' [{via}]')
        if len(cycles) > MAX_CYCLES:
            errors.append(f'call cycles: more than {MAX_CYCLES} among ' + ', '.join(sorted(part)))
    return errors


def check_symbols(runtime, files, build, nm):
    """Checks 4-6: (layer problems, header problems, cycle problems, note)."""
    archive = Path(build) / 'runtime' / 'libwspool_internal.a'
    if not archive.exists():
        return [f'no {archive}: build the library first'], [], [], None
    symbols, note = read_symbols(archive, nm)
    if symbols is None:
        return [], [], [], note
    defs, undefs = symbols
    edges = symbol_edges(defs, undefs)
    return (check_edge_layers(edges), check_header_names(runtime, files, defs),
            call_cycles(edges), None)


def main(root, build=None, nm='nm'):
    runtime, include = Path(root) / 'runtime', Path(root) / 'include'
    files = sorted(p.name for p in runtime.iterdir() if p.suffix in ('.c', '.h', '.S'))
    public = {p.relative_to(include).as_posix() for p in include.rglob('*') if p.is_file()}
    table = check_table(files)
    includes, graph = check_includes(runtime, files, public)
    cycles = include_cycles(graph)
    groups = [('table', table), ('include', includes), ('include cycle', cycles)]
    if build:
        uses, names, calls, note = check_symbols(runtime, files, build, nm or 'nm')
        groups += [('symbol layer', uses), ('header name', names), ('call cycle', calls)]
    else:
        note = 'note: no build root given: symbols not checked'
    for _, errors in groups:
        for e in errors:
            print(e)
    if note:
        print(note)
    total = sum(len(errors) for _, errors in groups)
    counts = ', '.join(f'{len(errors)} {what}' for what, errors in groups)
    print(f'{len(files)} files: {total} problem{"" if total == 1 else "s"} ({counts})')
    return 1 if total else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:4]))
