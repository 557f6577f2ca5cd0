"""MkDocs hook: fills the algorithm pages with facts read from the registry at build time, and
includes the repository's own Markdown files (``DEVIATIONS.md``, ``ARCHITECTURE.md``).

A page line ``<!-- algorithm: NAME -->`` becomes NAME's facts (:func:`algorithm_facts`: what it
runs, its data, its communication cost, its privacy support and every flag with its default and
own-data default); ``<!-- algorithms -->`` becomes the table of every registered algorithm and
``<!-- experiments -->`` the table of the reproduction experiments, ``<!-- privacy-coverage -->``
the privacy declaration of :mod:`tff_esn.privacy.coverage`, and ``<!-- results: EXPERIMENT -->``
the committed snapshot of our last ``tff-esn reproduce`` run of EXPERIMENT (``docs/results/``,
written by :mod:`scripts.docs_results`; a missing one fails the build). The facts come from
:func:`tff_esn.registry.algorithms.available_algorithms` and :func:`scripts.framework.experiments`, so
a renamed flag, a new default, a new algorithm or experiment shows on the site without editing
a page; an unknown NAME fails the build. :func:`on_files` adds the figure of every reservoir topology's Ŵ
and spectrum (:data:`TOPOLOGY_FIGURE`), drawn from the package at build time.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the reproduction package scripts/ imports from the repository (it is not installed)
    sys.path.insert(0, str(ROOT))
INCLUDE = re.compile(r"^<!-- include(-if-present)?: ([\w.-]+\.md) -->$", re.MULTILINE)
MARKER = re.compile(r"^<!-- algorithm: ([a-z0-9-]+) -->$", re.MULTILINE)
RESULTS = re.compile(r"^<!-- results: ([a-z0-9-]+) -->$", re.MULTILINE)
NOT_REPRODUCED = "Not part of `tff-esn reproduce`"
"""How an algorithm page without a results marker says so (no seed table exercises it)."""
TABLE_MARKER = "<!-- algorithms -->"
EXPERIMENTS_MARKER = "<!-- experiments -->"
COVERAGE_MARKER = "<!-- privacy-coverage -->"
TOPOLOGY_FIGURE = "assets/generated/topologies.svg"
"""The site path of :func:`topology_figure`'s SVG (not a file of the repository)."""


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(value: object) -> str:
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _reference(obj: object) -> str:
    """A cross-reference to ``obj``'s entry in the API reference (resolved by mkdocs-autorefs)."""
    module, name = getattr(obj, "__module__"), getattr(obj, "__qualname__")
    return f"[`{name}`][{module}.{name}]"


def _privacy(algo) -> str:
    if not algo.privacy.settings:
        return "none (no secure aggregation, no differential privacy)"
    flags = ", ".join(f"`--{s.replace('_', '-')}`" for s in algo.privacy.settings)
    local = " Differential privacy with `--dp-model local` only." if algo.privacy.local_only else ""
    return f"flags {flags}.{local} What each mechanism covers: [Privacy](../privacy.md)."


def algorithm_facts(name: str) -> str:
    """The Markdown facts of registered algorithm ``name``: summary list, then the flags table."""
    from tff_esn.registry.algorithms import get_algorithm

    algo = get_algorithm(name)
    cost = algo.communication_function
    cost_text = (f"{inspect.getdoc(cost).splitlines()[0]} ({_reference(cost)})" if cost is not None
                 else "not declared")
    tff = "yes" if algo.tff is True else ("no" if algo.tff is False else
                                           "only with `--backend tff`, privacy flags or subrounds")
    own = algo.own_data
    pipeline = f"`{algo.pipeline}`" if algo.pipeline else "the source's IncFed pipeline"
    lines = [
        f"`tff-esn run {name}`: {algo.help}.",
        "",
        f"- **Config**: {_reference(algo.config)}",
        f"- **Data**: labels {' or '.join(algo.labels)}; sequences of unequal length "
        f"{'harvested each at its own length' if algo.ragged else 'refused'}; pipeline on the seeds' sources: {pipeline}",
        f"- **Runs TensorFlow Federated**: {tff}",
        f"- **Communication per client**: {cost_text}",
        f"- **Privacy**: {_privacy(algo)}",
        "",
        "| flag | default | own-data default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for setting_name, setting in algo.settings().items():
        own_value = _value(own[setting_name]) if setting_name in own else ""
        choices = f" (one of {', '.join(map(str, setting.choices))})" if setting.choices else ""
        lines.append(f"| `{setting.flag}` | {_value(setting.default)} | {own_value} | "
                     f"{_cell(setting.help)}{_cell(choices)} |")
    return "\n".join(lines)


def algorithms_table() -> str:
    """One row per registered algorithm: its page, what it computes, privacy, TFF."""
    from tff_esn.registry.algorithms import available_algorithms

    lines = ["| algorithm | what it computes | privacy flags | TFF |", "| --- | --- | --- | --- |"]
    for name, algo in available_algorithms().items():
        tff = "yes" if algo.tff is True else ("no" if algo.tff is False else "optional")
        privacy = "yes" if algo.privacy.settings else "no"
        lines.append(f"| [{name}]({name}.md) | {_cell(algo.help)} | {privacy} | {tff} |")
    return "\n".join(lines)


def results_pages() -> dict[str, list[str]]:
    """Experiment → the pages (paths under ``docs/``) whose ``<!-- results: ... -->`` marker shows it."""
    from scripts.docs_results import SNAPSHOTS

    shown: dict[str, list[str]] = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if SNAPSHOTS not in page.parents:
            for name in RESULTS.findall(page.read_text()):
                shown.setdefault(name, []).append(page.relative_to(ROOT / "docs").as_posix())
    return shown


def experiments_table() -> str:
    """One row per reproduction experiment (:func:`scripts.framework.experiments`, in the order
    ``reproduce all`` runs them): its target, group, what it runs, the published results and the
    pages showing our run's tables (links relative to the docs root)."""
    from scripts.framework import experiments

    shown = results_pages()
    lines = ["| experiment | group | what it runs | reproduces | data | our results |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, experiment in experiments().items():
        pages = ", ".join(f"[{Path(page).stem}]({page})" for page in shown.get(name, []))
        lines.append(f"| `{name}` | `{experiment.group}` | {_cell(experiment.title)} | {_cell(experiment.reproduces)} | "
                     f"{', '.join(experiment.data)} | {pages} |")
    return "\n".join(lines)


def results(match: re.Match) -> str:
    """The results snapshot of experiment ``match.group(1)``; an unknown experiment or a missing
    snapshot fails the build with the command that writes it."""
    from scripts import docs_results
    from scripts.framework import experiments

    name = match.group(1)
    if name not in experiments():
        raise KeyError(f"docs: results marker names {name!r}, not a reproduction experiment "
                       f"({', '.join(experiments())}).")
    path = docs_results.SNAPSHOTS / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"docs: {path} (our results of {name!r}) is missing; write it with "
                                "`make reproduce` then `make docs-results REPORT=runs` "
                                "(python -m scripts.docs_results RUN_DIR).")
    return path.read_text()


def coverage_table() -> str:
    """Per algorithm with privacy support, its registration's declaration
    (:func:`tff_esn.privacy.coverage.declaration`): what secure aggregation covers, and the values
    released as public with secure aggregation and DP on."""
    from tff_esn.registry.algorithms import get_algorithm, names_where
    from tff_esn.privacy.coverage import declaration

    lines = ["| algorithm | covered | public (secure aggregation + DP) |", "| --- | --- | --- |"]
    for name in names_where(lambda a: bool(a.privacy)):
        said = declaration(get_algorithm(name).privacy, secure=True, dp=True)
        public = ", ".join(f"`{value}`" for value in said["public"])
        lines.append(f"| [{name}](algorithms/{name}.md) | {_cell(said['covers'])} | {public} |")
    return "\n".join(lines)


def include(match: re.Match) -> str:
    """The text of a file at the repository's root; a missing one fails the build unless the
    marker says ``include-if-present``, where a note takes its place."""
    path = ROOT / match.group(2)
    if path.is_file():
        return path.read_text()
    if match.group(1):
        return f"# {path.stem.title()}\n\n`{path.name}` is not written yet; the [API reference](reference/tff_esn/index.md) lists every module."
    raise FileNotFoundError(f"docs: {path} is included by a page but does not exist.")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: expands the markers of a page."""
    markdown = INCLUDE.sub(include, markdown)
    markdown = MARKER.sub(lambda m: algorithm_facts(m.group(1)), markdown)
    markdown = RESULTS.sub(results, markdown)
    if COVERAGE_MARKER in markdown:
        markdown = markdown.replace(COVERAGE_MARKER, coverage_table())
    if EXPERIMENTS_MARKER in markdown:
        markdown = markdown.replace(EXPERIMENTS_MARKER, experiments_table())
    return markdown.replace(TABLE_MARKER, algorithms_table())


def topology_figure(units: int = 60) -> bytes:
    """SVG of every topology's Ŵ (``units`` units, ρ 0.9, seed 0): non-zeros above, eigenvalues and ρ below."""
    import io

    from tff_esn.esn.draws import recurrent_weights
    from tff_esn.esn.hyperparameters import TOPOLOGIES, ReservoirConfig
    from tff_esn.runs.plots import plot_topologies
    from tff_esn.runs.figures import pyplot

    weights = {t: recurrent_weights(ReservoirConfig(units=units, topology=t, spectral_radius=0.9, seed=0))
               for t in TOPOLOGIES}
    fig = plot_topologies(weights, f"Ŵ of each topology ({units} units, ρ = 0.9, seed 0)")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot().close(fig)
    return buffer.getvalue()


def on_files(files, config):
    """Adds :data:`TOPOLOGY_FIGURE`, generated at build time."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, TOPOLOGY_FIGURE, content=topology_figure()))
    return files
