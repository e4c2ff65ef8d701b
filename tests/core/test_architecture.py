"""The core's packages keep one direction: no import circle anywhere in ``preimage``."""

from __future__ import annotations

import grimp


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(d for d in graph.find_modules_directly_imported_by(m)
                       if d.startswith("preimage")) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(edges.get(node, ()))):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_no_module_of_preimage_is_in_an_import_circle() -> None:
    """Following runtime imports (function-level ones too), no module reaches itself."""
    graph = grimp.build_graph("preimage", exclude_type_checking_imports=True)
    circles = _circles(graph)
    assert circles == [], "import circles: " + "; ".join(" ↔ ".join(c) for c in circles)


def test_the_circle_finder_sees_a_circle() -> None:
    """The check itself finds a two-module circle and a three-module one."""
    graph = grimp.ImportGraph()
    for a, b in [("preimage.a", "preimage.b"), ("preimage.b", "preimage.a"),
                 ("preimage.c", "preimage.d"), ("preimage.d", "preimage.e"),
                 ("preimage.e", "preimage.c"), ("preimage.e", "preimage.f")]:
        graph.add_import(importer=a, imported=b)
    assert sorted(_circles(graph)) == [["preimage.a", "preimage.b"],
                                       ["preimage.c", "preimage.d", "preimage.e"]]
