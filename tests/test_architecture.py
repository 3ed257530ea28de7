"""The import graph of ctxwin/ keeps the architecture: no cycles, no upward imports, no private names across modules,
and no call-backs from the trim engine up into the strategies or the planner. (Private *modules*, ``_name``, are
what ctxwin's own code imports; that nothing outside ctxwin does is tests/test_public_names.py's.)

Every module is parsed with ``ast``; an import anywhere in it counts (inside functions and ``if TYPE_CHECKING:``
blocks too), and ``from pkg import name`` counts as importing ``pkg`` unless ``pkg.name`` is a module. Importing a
module implicitly runs its parent packages' ``__init__``; that is not counted (every module would then import
``ctxwin``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ctxwin"

# Lowest first: a module may import its own layer and the layers before it, never a later one. A module belongs to
# the layer of its longest matching prefix; "ctxwin" itself (the package's public face) matches only exactly.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("utilities", ("ctxwin._plural", "ctxwin._cpus", "ctxwin._idle_threads", "ctxwin._tracing", "ctxwin._errors",
                   "ctxwin._install", "ctxwin._accelerators")),
    ("messages", ("ctxwin.messages",)),
    ("plugins", ("ctxwin.hookspecs", "ctxwin._plugins")),
    ("counters", ("ctxwin.counters",)),
    ("trim engine", ("ctxwin.trim",)),
    ("strategies", ("ctxwin.strategies",)),
    ("recall", ("ctxwin.recall",)),
    ("planner", ("ctxwin.planner",)),
    ("applications", ("ctxwin.history", "ctxwin.batch", "ctxwin.integrations")),
    ("cli", ("ctxwin.cli", "ctxwin.__main__")),
    ("public API", ("ctxwin",)),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# A C extension is a module too, read through its type stub.
MODULES: dict[str, Path] = {module_name(path): path for path in sorted([*ROOT.rglob("*.py"), *ROOT.rglob("*.pyi")])}


def _package(name: str) -> str:
    """The package a relative import in module ``name`` starts from."""
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _within(target: str) -> str | None:
    """The ctxwin module an imported name lands in: the longest prefix that is a module, None outside ctxwin."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def imports(name: str) -> Iterator[tuple[str, str, int]]:
    """``(imported module, imported name or "", line)`` for every import in module ``name``."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _within(alias.name)) is not None:
                    yield target, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package(name)
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in MODULES:
                    yield submodule, "", node.lineno
                elif (target := _within(base)) is not None:
                    yield target, alias.name, node.lineno


GRAPH: dict[str, set[str]] = {
    name: {target for target, _, _ in imports(name) if target != name} for name in MODULES
}


def layer_of(name: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer index)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = name == prefix if prefix == "ctxwin" else name == prefix or name.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the groups of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return groups


def a_cycle(group: list[str]) -> list[str]:
    """One cycle through the group's first module, found by breadth-first search inside the group."""
    members, start = set(group), group[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(GRAPH[node] & members):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {group}")


def test_the_graph_sees_the_imports_it_should() -> None:
    """The parser itself: relative, nested and TYPE_CHECKING imports count; ``from pkg import module`` is the
    module."""
    assert "ctxwin.hookspecs" in GRAPH["ctxwin._plugins"]  # from ctxwin import hookspecs
    assert "ctxwin.counters._lookup" in GRAPH["ctxwin.counters"]
    assert "ctxwin.messages._content" in GRAPH["ctxwin.messages._base"]  # under TYPE_CHECKING
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    cycles = [" -> ".join(a_cycle(group)) for group in strongly_connected(GRAPH)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_every_module_has_a_layer() -> None:
    assert [name for name in MODULES if layer_of(name) is None] == []


def test_nothing_imports_upward() -> None:
    upward = []
    for name in MODULES:
        for target, _, line in imports(name):
            own, other = layer_of(name), layer_of(target)
            if own is not None and other is not None and other > own:
                upward.append(f"{name}:{line} ({LAYERS[own][0]}) imports {target} ({LAYERS[other][0]})")
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_no_private_names_from_other_modules() -> None:
    private = [
        f"{name}:{line} imports {imported} from {target}"
        for name in MODULES
        for target, imported, line in imports(name)
        if target != name and imported.startswith("_") and not imported.startswith("__")
    ]
    assert not private, "private names imported from another module:\n" + "\n".join(private)


def _names_defined(layers: range) -> set[str]:
    """The functions, methods and class attributes defined by the modules of ``layers`` (indexes into LAYERS)."""
    names: set[str] = set()
    for name, path in MODULES.items():
        if layer_of(name) in layers:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, (ast.Name, ast.Attribute)):
                    names.add(node.target.id if isinstance(node.target, ast.Name) else node.target.attr)
                elif isinstance(node, ast.Assign):
                    names.update(target.attr for target in node.targets if isinstance(target, ast.Attribute))
    return names


def _names_reached(module: str) -> Iterator[tuple[str, int]]:
    """Every attribute a module reads or calls by name: ``x.name`` and ``getattr``/``hasattr(x, "name")``."""
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            yield node.attr, node.lineno
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
        ):
            yield node.args[1].value, node.lineno


ENGINE = next(i for i, (layer, _) in enumerate(LAYERS) if layer == "trim engine")
ABOVE = range(ENGINE + 1, next(i for i, (layer, _) in enumerate(LAYERS) if layer == "applications"))


def test_the_trim_engine_never_calls_up_into_strategies_or_the_planner() -> None:
    """No call-back either: the engine reads no attribute that only the strategies or the planner define (a
    duck-typed stand-in, such as a counter with a ``known_counts`` hook answered by the planner's meter). What it
    needs from above comes in as plain functions of its own signatures (``trim_counted``)."""
    builtin = {name for kind in (str, bytes, list, dict, set, tuple, int, float) for name in dir(kind)}
    own = _names_defined(range(ENGINE + 1)) | builtin
    only_above = _names_defined(ABOVE) - own
    reached = [
        f"{module}:{line} reads {attr!r}, defined only above it"
        for module in MODULES if layer_of(module) == ENGINE
        for attr, line in _names_reached(module) if attr in only_above
    ]
    assert not reached, "the trim engine calls up:\n" + "\n".join(reached)
    assert "known_counts" not in own  # what the old stand-in was called: gone from the lower layers too
