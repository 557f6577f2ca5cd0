"""The package's import structure and layering, read from the source with ``ast`` (nothing is imported).

The layers are ARCHITECTURE.md's table: a module imports only from its own layer or below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tff_esn

PACKAGE = Path(tff_esn.__file__).parent
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tff_esn", "discriminator", "tuning", "scripts")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ESN core", ("tff_esn.esn", "tff_esn.common")),
    ("services", ("tff_esn.data", "tff_esn.privacy", "tff_esn.runtime", "tff_esn.runs")),
    ("registry", ("tff_esn.registry",)),
    ("algorithms", ("tff_esn.closed_form", "tff_esn.federated", "discriminator", "tuning")),
    ("entry points", ("tff_esn.cli", "tff_esn.__main__", "tuning.cli", "discriminator.cli", "scripts")),
)
"""Layer name and the modules (with their submodules) in it; a more specific prefix wins."""


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of ``module`` (the longest matching prefix decides)."""
    matches = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer of ARCHITECTURE.md"
    return max(matches)[1]


def test_every_module_imports_only_its_layer_or_below():
    graph = import_graph()
    upward = sorted(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                    for module, targets in graph.items() if module != "tff_esn"
                    for target in targets if target != "tff_esn" and layer_of(target) > layer_of(module))
    assert not upward, "\n".join(upward)


def test_esn_core_imports_no_algorithm_layer():
    graph = import_graph()
    core = sorted(m for m in graph if m.startswith("tff_esn.esn"))
    assert {"tff_esn.esn", "tff_esn.esn.hyperparameters", "tff_esn.esn.ridge", "tff_esn.esn.states_numpy",
            "tff_esn.esn.states_tf"} <= set(core)
    above = {m: sorted(t for t in graph[m] if layer_of(t) > 0) for m in core}
    assert not {m: targets for m, targets in above.items() if targets}


def _imports_tff_module(source: str) -> bool:
    """Whether a source has an ``import tensorflow_federated`` statement (anywhere, functions included)."""
    return any(isinstance(node, ast.Import) and any(a.name == "tensorflow_federated" for a in node.names)
               for node in ast.walk(ast.parse(source)))


def test_tff_is_loaded_through_the_runtime_only():
    """Every module that builds or runs TFF computations gets ``tff`` from :func:`tff_esn.runtime.load_tff`,
    which installs the package's context in place of TFF's stock one (whose worker outlives Python)."""
    files = [f for package in ("tff_esn", "discriminator", "tuning") for f in (ROOT / package).rglob("*.py")]
    direct = sorted(str(f.relative_to(ROOT)) for f in files
                    if "runtime" not in f.relative_to(ROOT).parts and _imports_tff_module(f.read_text()))
    assert not direct, f"use tff = tff_esn.runtime.load_tff() instead of import tensorflow_federated in {direct}"
    assert _imports_tff_module("def f():\n    import numpy, tensorflow_federated as tff\n")
    assert not _imports_tff_module("from tensorflow_federated.proto.v0 import computation_pb2\n")


def test_the_layer_check_fails_on_an_upward_import():
    assert layer_of("tff_esn.esn.ridge") == 0 < layer_of("tff_esn.privacy.dp_stats") == 1
    assert layer_of("tuning.cli") == 4 > layer_of("tuning.search") == 3
    assert layer_of("tff_esn.closed_form.incfed") == 3 > layer_of("tff_esn.registry.algorithms") == 2


def test_the_esn_core_numpy_side_imports_no_tensorflow_and_exports_resolve():
    """``tff_esn.esn``'s numpy modules and lazy exports load without TensorFlow; the layer brings it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tff_esn.esn as esn\n"
        "from tff_esn.esn import draws, hyperparameters, ridge, states_numpy, weights\n"
        "names = [n for n in esn.__all__ if n != 'Reservoir']\n"
        "print(all(getattr(esn, n) is not None for n in names), 'tensorflow' in sys.modules)\n"
        "print(esn.Reservoir.__module__, 'tensorflow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout.split("\n")
    assert out[0] == "True False"
    assert out[1] == "tff_esn.esn.layer True"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


LAZY_IMPORTERS = ("LazyModule", "import_module")
"""Calls that import the module named by their first argument (when it is a string literal)."""


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom | ast.Call]:
    """Every import that can run: statements at module level and in function bodies alike (a
    function-level import defers a cycle to the first call, it does not remove it), and
    ``LazyModule("a.b")`` / ``importlib.import_module("a.b")``; not under ``if TYPE_CHECKING:``
    (annotations only, never executed)."""
    found: list[ast.Import | ast.ImportFrom | ast.Call] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in LAZY_IMPORTERS
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending += node.orelse
        else:
            pending += ast.iter_child_nodes(node)
    return found


def _targets(node: ast.Import | ast.ImportFrom | ast.Call, module: str, is_package: bool,
             modules: set[str]) -> set[str]:
    """The project modules an import loads (``from a import b`` loads ``a.b`` when that is a
    module, else ``a``)."""
    if isinstance(node, ast.Call):
        names = [node.args[0].value]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                 for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports (:func:`_imports`)."""
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    modules = set(files)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = set().union(*(_targets(n, name, is_package, modules)
                                    for n in _imports(tree))) - {name}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path ``a → b → … → a``) per strongly connected component with more than
    one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_through(component, graph) for component in components]


def _cycle_through(component: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first)."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle in strongly connected component {sorted(component)}")


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_cycle_finder_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert sorted(find_cycles(graph)) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_import_scan_sees_function_level_lazy_and_relative_imports_but_not_type_checking():
    source = ("from typing import TYPE_CHECKING\n"
              "import tff_esn.data.sources\n"
              "from . import ridge\n"
              "from ..privacy import config\n"
              "if TYPE_CHECKING:\n    from tff_esn.registry import algorithms\n"
              "def f():\n    from tff_esn.runtime import ensure_context\n"
              "tf = LazyModule('tff_esn.reservoir')\n"
              "m = importlib.import_module('scripts.report')\n")
    modules = {"tff_esn", "tff_esn.data.sources", "tff_esn.esn", "tff_esn.esn.ridge", "tff_esn.privacy",
               "tff_esn.privacy.config", "tff_esn.registry.algorithms", "tff_esn.runtime", "tff_esn.reservoir",
               "scripts.report", "tff_esn.data"}
    found = set().union(*(_targets(n, "tff_esn.esn.layer", False, modules) for n in _imports(ast.parse(source))))
    assert found == {"tff_esn.data.sources", "tff_esn.esn.ridge", "tff_esn.privacy.config", "tff_esn.runtime",
                     "tff_esn.reservoir", "scripts.report"}
