"""The package's layering, read from the source (AST), not from what a run happens to import."""

import ast
from pathlib import Path

import tff_esn

PACKAGE = Path(tff_esn.__file__).parent

ESN_CORE_MAY_IMPORT = ("tff_esn.esn", "tff_esn.lazy", "tff_esn.run_warnings", "tff_esn.validation")
"""The ESN core stands on nothing but itself and the package's generic helpers: no algorithm,
``closed_form``, ``federated``, ``privacy``, ``data``, ``cli`` or ``runtime`` module."""


def _tff_esn_imports(source: str, package: str) -> set[str]:
    """Every ``tff_esn`` module a source names: ``import``/``from … import`` statements anywhere
    (functions and ``TYPE_CHECKING`` blocks included; relative ones resolved against ``package``)
    and the string argument of ``LazyModule(…)`` / ``import_module(…)``."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names if module == "tff_esn")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "LazyModule", "import_module"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return {n for n in names if n == "tff_esn" or n.startswith("tff_esn.")}


def _outside(names: set[str], allowed: tuple[str, ...]) -> set[str]:
    return {n for n in names if n != "tff_esn" and not any(n == a or n.startswith(a + ".") for a in allowed)}


def test_esn_core_imports_no_algorithm_layer():
    files = sorted((PACKAGE / "esn").glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "hyperparameters.py", "ridge.py", "states_numpy.py",
                                      "states_tf.py"}
    offending = {f.name: sorted(_outside(_tff_esn_imports(f.read_text(), "tff_esn.esn"), ESN_CORE_MAY_IMPORT))
                 for f in files}
    assert not {name: bad for name, bad in offending.items() if bad}


def test_the_import_scan_sees_every_form_of_import():
    source = (
        "import tff_esn.privacy.dp_stats\n"
        "from tff_esn.closed_form import incfed\n"
        "from tff_esn import federated\n"
        "from ..data import sequences\n"
        "from . import ridge\n"
        "def f():\n    from tff_esn.runtime import ensure_context\n"
        "x = LazyModule('tff_esn.cli.run')\n"
        "y = importlib.import_module('tff_esn.algorithms')\n"
    )
    found = _outside(_tff_esn_imports(source, "tff_esn.esn"), ESN_CORE_MAY_IMPORT)
    assert found == {"tff_esn.privacy.dp_stats", "tff_esn.closed_form", "tff_esn.federated", "tff_esn.data",
                     "tff_esn.runtime", "tff_esn.cli.run", "tff_esn.algorithms"}


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
