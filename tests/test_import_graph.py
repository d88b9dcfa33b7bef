"""The packages' import graph, read from the source: no import circle between modules (imports
inside functions count too, so a circle cannot hide behind a deferred import), and the layers
point one way: tlinterp imports neither tlgpu nor fuzz, tlgpu does not import fuzz."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tlinterp", "tlgpu", "fuzz", "corpus")


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (f, is_pkg)
    return mods


def _resolve(name: str, mods) -> str | None:
    """The module an import names: the longest known prefix (`a.b.name` -> `a.b`)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (a package's own __init__ counts as a module;
    importing `pkg.mod` does not add an edge to `pkg`, which Python runs first anyway)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        base = m if is_pkg else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_resolve(a.name, mods) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    b = base
                    for _ in range(node.level - 1):
                        b = b.rpartition(".")[0]
                    mod = b + ("." + node.module if node.module else "")
                else:
                    mod = node.module or ""
                for a in node.names:  # `from pkg import mod` imports the module pkg.mod
                    full = f"{mod}.{a.name}"
                    targets.append(full if full in mods else _resolve(mod, mods))
            edges[m].update(t for t in targets if t and t != m)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_no_import_circle():
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle():
    graph = import_graph()
    types, printer = "tlinterp.lang.types", "tlinterp.lang.v03.printer"
    graph[types].add(printer)  # what types.py once did for __str__
    assert [printer, types] in [sorted((m for m in c if m in (printer, types)), reverse=True)
                                for c in circles(graph)]


def test_layers_point_one_way():
    below = {"tlinterp": ("tlgpu", "fuzz"), "tlgpu": ("fuzz",)}
    wrong = [(m, t) for m, targets in import_graph().items() for t in targets
             if t.split(".")[0] in below.get(m.split(".")[0], ())]
    assert wrong == []


# what each tlinterp sub-package may import inside tlinterp (docs/architecture.md states the
# same rules per package); "root" is the package's own top (the public API and apitypes.py)
TLINTERP_RULES = {
    "root": {"lang", "checker", "front", "interp", "cli"},
    "lang": set(),
    "checker": {"lang"},
    "front": {"lang", "checker"},
    "io": {"lang"},
    "interp": {"lang", "checker", "front", "io"},
    "impl": {"root", "lang", "front", "interp", "io"},
    "cli": {"root", "lang", "checker", "front", "interp", "impl", "io"},
}
# single edges the rules allow by name, each for a stated reason
TLINTERP_EXCEPTIONS = {
    # v0.4 text is written from the IR in the form v0.4 can spell
    ("tlinterp.lang.v04.printer", "tlinterp.front.migrate"),
    # the coopmatrix layout facts the v0.4 checker checks shapes against
    ("tlinterp.checker.v04", "tlinterp.interp.coopmatrix"),
}


def _tlinterp_role(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in TLINTERP_RULES) \
        else "root"


def rule_breaks(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, targets in edges.items() if m.startswith("tlinterp")
                  for t in targets if t.startswith("tlinterp")
                  and _tlinterp_role(t) != _tlinterp_role(m)
                  and _tlinterp_role(t) not in TLINTERP_RULES[_tlinterp_role(m)]
                  and (m, t) not in TLINTERP_EXCEPTIONS)


def test_tlinterp_import_rules():
    assert rule_breaks(import_graph()) == []


def test_tlinterp_import_rules_catch_a_wrong_edge():
    graph = import_graph()
    graph["tlinterp.lang.ir"].add("tlinterp.interp.execute")  # the IR reaching up a layer
    assert rule_breaks(graph) == [("tlinterp.lang.ir", "tlinterp.interp.execute")]
