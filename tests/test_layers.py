"""The package's imports flow one way and never in a circle.

Layers, lowest first (a module may import its own layer and the layers below it):
io (errors, version, io/, tags, metrics) < decode, nn, linear < models < stages < registry < train, runtime < cli.
Every import counts, also one inside a function: a lazy import is still a dependency.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "nlpipe"

LAYERS: List[List[str]] = [
    ["nlpipe.errors", "nlpipe.version", "nlpipe.io", "nlpipe.tags", "nlpipe.metrics", "nlpipe.vocab"],
    ["nlpipe.decode", "nlpipe.nn", "nlpipe.linear"],
    ["nlpipe.models"],
    ["nlpipe.stages"],
    ["nlpipe.registry"],
    ["nlpipe.train", "nlpipe.runtime"],
    ["nlpipe.cli", "nlpipe.__main__", "nlpipe"],
]

def modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(mods: Dict[str, Path]) -> Dict[str, Set[str]]:
    """module -> the package modules it imports (resolving relative imports and imported submodules)."""
    graph: Dict[str, Set[str]] = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                for a in node.names:
                    deps.add(f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src)
        graph[mod] = {d for d in deps if d in mods and d != mod}
    return graph


def layer(mod: str) -> int:
    best = (-1, None)
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best[0]:
                best = (len(p), i)
    assert best[1] is not None, f"{mod} belongs to no layer: add it to LAYERS"
    return best[1]


def test_imports_follow_the_layers():
    graph = imports(modules())
    upward = sorted((m, d) for m, deps in graph.items() for d in deps if layer(d) > layer(m))
    assert not upward, "imports against the layering:\n" + "\n".join(f"  {m} -> {d}" for m, d in upward)


def find_cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Each cycle met by a depth-first walk, as the path that closes it (``a -> b -> a``)."""
    state: Dict[str, int] = {}
    stack: List[str] = []
    cycles: List[List[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def test_no_import_cycles():
    cycles = find_cycles(imports(modules()))
    assert not cycles, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in cycles)


def test_the_checker_sees_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    pkg = tmp_path / "nlpipe"
    (pkg / "io").mkdir(parents=True)
    (pkg / "stages").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "io" / "__init__.py").write_text("")
    (pkg / "stages" / "__init__.py").write_text("")
    (pkg / "io" / "a.py").write_text("def f():\n    from ..stages import b\n")
    (pkg / "stages" / "b.py").write_text("from nlpipe.io.a import f\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    graph = imports(modules())
    assert graph["nlpipe.io.a"] == {"nlpipe.stages.b"} and graph["nlpipe.stages.b"] == {"nlpipe.io.a"}
    assert layer("nlpipe.stages.b") > layer("nlpipe.io.a")
    assert find_cycles(graph) == [["nlpipe.io.a", "nlpipe.stages.b", "nlpipe.io.a"]]
