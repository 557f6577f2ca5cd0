"""The docs site: the README is a short landing page, every page is in the nav and every nav entry
is a page, the algorithm pages follow the registry, and (slow) the strict build passes."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README_LIMIT = 6_000
NAV_PAGE = re.compile(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", re.MULTILINE)
LINK = re.compile(r"\]\(((?:docs/)[^)#\s]+)(?:#[^)]*)?\)")


def _load(name: str):
    """A build script of docs/ as a module (``docs_hooks``, ``docs_gen_reference``)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hooks():
    return _load("hooks")


def nav_pages() -> list[str]:
    """The pages listed in mkdocs.yml's nav (the generated API reference is its own section)."""
    text = (ROOT / "mkdocs.yml").read_text()
    return NAV_PAGE.findall(text[text.index("\nnav:"):])


def docs_pages() -> list[str]:
    """The pages under docs/ (the results snapshots are included into pages, not pages themselves)."""
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if (DOCS / "results") not in p.parents)


def test_readme_is_a_short_landing_page_linking_into_the_docs():
    text = (ROOT / "README.md").read_text()
    assert len(text) < README_LIMIT, f"README.md has {len(text)} characters; move details into docs/"
    for command in ("make reproduce", "make test", "make docs"):
        assert command in text
    links = LINK.findall(text)
    assert len(links) >= 8
    for link in links:
        assert (ROOT / link).is_file(), f"README links to {link}, which does not exist"


def test_readme_example_runs_on_arrays_saved_as_it_expects(tmp_path, monkeypatch):
    import numpy as np

    (code,) = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.DOTALL | re.MULTILINE)
    rng = np.random.default_rng(0)
    y = np.tile(np.arange(3), 40)
    x = np.sin(0.3 * (1 + y)[:, None, None] * np.arange(20)[None, :, None]) + rng.normal(0, 0.3, (120, 20, 2))
    monkeypatch.chdir(tmp_path)
    for name, array in (("X", x), ("y", y), ("client", np.repeat([f"u{i}" for i in range(10)], 12)),
                        ("X_new", x[:7])):
        np.save(f"{name}.npy", array)
    namespace: dict = {}
    exec(compile(code, str(ROOT / "README.md"), "exec"), namespace)
    assert namespace["record"]["test"]["accuracy"] > namespace["record"]["baselines"]["majority"]["test"]["accuracy"]
    assert namespace["labels"].shape == (7,) and set(namespace["labels"].tolist()) <= {0, 1, 2}


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav, pages = nav_pages(), docs_pages()
    assert sorted(nav) == pages, (f"pages missing from the nav: {sorted(set(pages) - set(nav))}; "
                                  f"nav entries without a page: {sorted(set(nav) - set(pages))}")
    assert "  - API reference: reference/" in (ROOT / "mkdocs.yml").read_text()


def test_every_registered_algorithm_has_a_page_showing_its_registry_facts():
    from tff_esn.registry.algorithms import available_algorithms

    marked = {}
    for page in sorted((DOCS / "algorithms").glob("*.md")):
        for name in _hooks().MARKER.findall(page.read_text()):
            marked[name] = page.stem
    assert marked == {name: name for name in available_algorithms()}


def test_algorithm_facts_show_the_flags_with_their_seed_and_own_data_defaults():
    hooks = _hooks()
    incfed = hooks.algorithm_facts("incfed")
    assert "| `--l2` | `1e-06` | `'auto'` |" in incfed
    assert "IncFed §III: up N_F² + N_F·N_Y, down N_Y·N_F." in incfed
    assert "[`IncFedConfig`][tff_esn.closed_form.configs.IncFedConfig]" in incfed
    assert "`--dp-epsilon`" in incfed and "`--dp-adaptive-clip`" not in incfed
    fedcurv = hooks.algorithm_facts("fedcurv")
    assert "| `--penalty` | `0.0001` |" in fedcurv and "| `--rounds` | `78` |" in fedcurv  # thesis §6.1
    assert "`--dp-adaptive-clip`" not in fedcurv and "| `--l2`" not in fedcurv
    assert "none (no secure aggregation" in hooks.algorithm_facts("ensemble")
    from tff_esn.registry.algorithms import available_algorithms

    rows = hooks.algorithms_table().splitlines()[2:]
    assert [row.split("]")[0][3:] for row in rows] == list(available_algorithms())
    with pytest.raises(KeyError, match="unknown algorithm 'nope'"):
        hooks.algorithm_facts("nope")


def test_the_experiments_table_lists_every_reproduction_experiment_in_run_order():
    from scripts.framework import experiments

    rows = _hooks().experiments_table().splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(experiments())
    assert any("| `incfed-tables` | `incfed` |" in row and "IncFed paper Tables III–VI" in row for row in rows)


def test_every_algorithm_page_shows_our_results_or_says_reproduce_does_not_run_it():
    from scripts.framework import experiments

    hooks = _hooks()
    for page in sorted((DOCS / "algorithms").glob("*.md")):
        if page.stem == "index":
            continue
        text = page.read_text()
        shown = hooks.RESULTS.findall(text)
        assert shown or hooks.NOT_REPRODUCED in text, f"{page.name}: neither a results marker nor '{hooks.NOT_REPRODUCED}'"
        assert not (shown and hooks.NOT_REPRODUCED in text), page.name
        assert set(shown) <= set(experiments()), page.name
    assert hooks.RESULTS.findall((DOCS / "algorithms" / "incfed.md").read_text()) == ["incfed-tables"]
    assert hooks.RESULTS.findall((DOCS / "algorithms" / "fedcurv.md").read_text()) == [
        "thesis-federated", "thesis-discriminative", "thesis-preliminary"]


def test_every_experiment_has_a_committed_snapshot_shown_on_a_page():
    from scripts.framework import experiments

    shown = _hooks().results_pages()
    assert set(shown) == set(experiments()), f"experiments no page shows: {set(experiments()) - set(shown)}"
    assert sorted(p.name for p in (DOCS / "results").iterdir()) == sorted(f"{name}.md" for name in experiments())
    rows = _hooks().experiments_table().splitlines()
    assert rows[0].endswith("| our results |")
    incfed = next(row for row in rows if row.startswith("| `incfed-tables` |"))
    assert incfed.endswith("| [centralized](algorithms/centralized.md), [fedavg-ridge](algorithms/fedavg-ridge.md), "
                           "[incfed](algorithms/incfed.md) |")


def test_results_markers_include_the_snapshot_and_fail_on_a_missing_or_unknown_one(tmp_path, monkeypatch):
    from scripts import docs_results

    hooks = _hooks()
    monkeypatch.setattr(docs_results, "SNAPSHOTS", tmp_path)
    (tmp_path / "privacy.md").write_text("### Our run of `privacy`\n\n| a |\n| --- |\n| 1 |\n")
    page = "# Privacy\n\n<!-- results: privacy -->\n\nafter\n"
    assert hooks.on_page_markdown(page, None, None, None) == (
        "# Privacy\n\n### Our run of `privacy`\n\n| a |\n| --- |\n| 1 |\n\n\nafter\n")
    with pytest.raises(FileNotFoundError, match=r"pfedrr-table\.md \(our results of 'pfedrr-table'\) is missing; "
                                                 r"write it with `make reproduce` then `make docs-results REPORT=runs`"):
        hooks.on_page_markdown("<!-- results: pfedrr-table -->", None, None, None)
    with pytest.raises(KeyError, match="'table-42', not a reproduction experiment"):
        hooks.on_page_markdown("<!-- results: table-42 -->", None, None, None)


def test_the_coverage_table_is_the_privacy_declaration():
    from tff_esn.registry.algorithms import get_algorithm, names_where
    from tff_esn.privacy.coverage import declaration

    rows = _hooks().coverage_table().splitlines()[2:]
    assert len(rows) == len(names_where(lambda a: bool(a.privacy))) == 6
    fedcurv = next(row for row in rows if row.startswith("| [fedcurv]"))
    said = declaration(get_algorithm("fedcurv").privacy, secure=True, dp=True)
    assert said["covers"] in fedcurv and "`accepted_clients`" in fedcurv


def test_include_markers_read_repository_files_and_fail_on_a_missing_required_one():
    hooks = _hooks()
    deviations = hooks.INCLUDE.sub(hooks.include, "<!-- include: DEVIATIONS.md -->")
    assert deviations == (ROOT / "DEVIATIONS.md").read_text()
    assert "not written yet" in hooks.INCLUDE.sub(hooks.include, "<!-- include-if-present: NOPE.md -->")
    with pytest.raises(FileNotFoundError, match="NOPE.md"):
        hooks.INCLUDE.sub(hooks.include, "<!-- include: NOPE.md -->")


def test_the_reference_covers_every_public_module_and_skips_private_ones():
    modules = {".".join(parts) for parts in _load("gen_reference").public_modules("tff_esn")}
    assert {"tff_esn", "tff_esn.registry.algorithms", "tff_esn.esn.ridge", "tff_esn.privacy.coverage"} <= modules
    assert "tff_esn.__main__" not in modules
    files = [p for p in (ROOT / "tff_esn").rglob("*.py") if p.name == "__init__.py" or not p.name.startswith("_")]
    assert len(modules) == len(files)



def test_the_topology_figure_is_an_svg_with_each_topologys_matrix_and_spectrum(tmp_path):
    import base64
    import xml.etree.ElementTree as ET

    from tff_esn.esn.hyperparameters import TOPOLOGIES

    hooks = _hooks()
    assert f"]({hooks.TOPOLOGY_FIGURE})" in (DOCS / "reservoirs.md").read_text()
    path = tmp_path / hooks.TOPOLOGY_FIGURE
    path.parent.mkdir(parents=True)
    path.write_bytes(hooks.topology_figure())
    assert 20_000 < path.stat().st_size < 1_000_000
    svg = ET.parse(path).getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    width, height = (float(svg.attrib[k].removesuffix("pt")) for k in ("width", "height"))
    assert 120 * len(TOPOLOGIES) < width < 180 * len(TOPOLOGIES) and 250 < height < 500  # a column per topology
    text = " ".join(t.strip() for t in svg.itertext())
    assert "60 units" in text and all(name in text for name in TOPOLOGIES) and text.count("ρ(Ŵ) =") == len(TOPOLOGIES)
    images = svg.findall(".//{http://www.w3.org/2000/svg}image")
    assert len(images) == len(TOPOLOGIES)  # one non-zero pattern per topology, a PNG of at least 60 × 60 pixels
    for image in images:
        png = base64.b64decode(image.attrib["{http://www.w3.org/1999/xlink}href"].split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert min(int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) >= 60

@pytest.mark.slow
def test_strict_docs_build(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (make docs installs the docs extra)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / _hooks().TOPOLOGY_FIGURE).stat().st_size > 20_000  # drawn at build time
    assert (tmp_path / "site" / "algorithms" / "incfed" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "tff_esn" / "esn" / "ridge" / "index.html").is_file()
