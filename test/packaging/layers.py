#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The runtime's layers point down (docs/design.md 1.1).

Every file of runtime/ has a layer in LAYERS; a file may include only
headers of its own layer or a lower one, the headers' include graph has no
cycle, and no file of runtime/ is missing from the table (a new file must
be given its layer). Argument: the source root."""
import re
import sys
from pathlib import Path

LAYERS = {
    # 0: primitives that know no pool
    'atomics.h': 0, 'task.h': 0, 'debug.h': 0, 'deque.h': 0, 'deque.c': 0,
    'gqueue.h': 0, 'gqueue.c': 0, 'sleep.h': 0, 'sleep.c': 0, 'nodes.h': 0,
    'nodes.c': 0, 'trace.h': 0, 'visitors.h': 0, 'visitors.c': 0,
    # 1: the scheduler (hooks.h: the hook state struct pool holds)
    'hooks.h': 1, 'scheduler.h': 1, 'split.h': 1, 'split.c': 1, 'worker.c': 1,
    'submit.c': 1,
    # 2: the API
    'api.h': 2, 'options.h': 2, 'options.c': 2, 'forkjoin.c': 2, 'parfor.c': 2,
    'pool.c': 2, 'stats.c': 2, 'trace.c': 2, 'placement.c': 2, 'hooks.c': 2,
    'debug.c': 2, 'cpu.c': 2, 'tramp.S': 2,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    runtime = Path(root) / 'runtime'
    errors = []
    files = sorted(p.name for p in runtime.iterdir() if p.suffix in ('.c', '.h', '.S'))
    graph = {}
    for name in files:
        if name not in LAYERS:
            errors.append(f'{name}: not in the layer table of {Path(__file__).name}')
            continue
        deps = INCLUDE.findall((runtime / name).read_text())
        graph[name] = deps
        for dep in deps:
            if dep not in LAYERS:
                errors.append(f'{name} includes "{dep}", which is not a runtime header')
            elif LAYERS[dep] > LAYERS[name]:
                errors.append(f'{name} (layer {LAYERS[name]}) includes {dep} (layer {LAYERS[dep]})')
    # Cycles among headers: depth-first search, grey = on the current path.
    state = {}

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
    for e in errors:
        print(e)
    print(f'{len(graph)} files, {len(errors)} problems')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
