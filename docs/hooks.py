"""MkDocs hook: fills the algorithm pages with facts read from the registry at build time, and
includes the repository's own Markdown files (``DEVIATIONS.md``, ``ARCHITECTURE.md``).

A page line ``<!-- algorithm: NAME -->`` becomes NAME's facts (:func:`algorithm_facts`: what it
runs, its data, its communication cost, its privacy support and every flag with its default and
own-data default); ``<!-- algorithms -->`` becomes the table of every registered algorithm and
``<!-- experiments -->`` the table of the reproduction experiments, ``<!-- privacy-coverage -->``
the privacy declaration of :mod:`tff_esn.privacy.coverage`. The facts come from
:func:`tff_esn.algorithms.available_algorithms` and :func:`scripts.framework.experiments`, so
a renamed flag, a new default, a new algorithm or experiment shows on the site without editing
a page; an unknown NAME fails the build.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r"^<!-- include(-if-present)?: ([\w.-]+\.md) -->$", re.MULTILINE)
MARKER = re.compile(r"^<!-- algorithm: ([a-z0-9-]+) -->$", re.MULTILINE)
TABLE_MARKER = "<!-- algorithms -->"
EXPERIMENTS_MARKER = "<!-- experiments -->"
COVERAGE_MARKER = "<!-- privacy-coverage -->"


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
    from tff_esn.algorithms import get_algorithm
    from tff_esn.defaults import OWN_DATA

    algo = get_algorithm(name)
    cost = algo.communication_function
    cost_text = (f"{inspect.getdoc(cost).splitlines()[0]} ({_reference(cost)})" if cost is not None
                 else "not declared")
    tff = "yes" if algo.tff is True else ("no" if algo.tff is False else
                                           "only with `--backend tff`, privacy flags or subrounds")
    own = OWN_DATA.get(name, {})
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
    from tff_esn.algorithms import available_algorithms

    lines = ["| algorithm | what it computes | privacy flags | TFF |", "| --- | --- | --- | --- |"]
    for name, algo in available_algorithms().items():
        tff = "yes" if algo.tff is True else ("no" if algo.tff is False else "optional")
        privacy = "yes" if algo.privacy.settings else "no"
        lines.append(f"| [{name}]({name}.md) | {_cell(algo.help)} | {privacy} | {tff} |")
    return "\n".join(lines)


def experiments_table() -> str:
    """One row per reproduction experiment (:func:`scripts.framework.experiments`, in the order
    ``reproduce all`` runs them): its target, group, what it runs and the published results."""
    from scripts.framework import experiments

    lines = ["| experiment | group | what it runs | reproduces | data |", "| --- | --- | --- | --- | --- |"]
    for name, experiment in experiments().items():
        lines.append(f"| `{name}` | `{experiment.group}` | {_cell(experiment.title)} | {_cell(experiment.reproduces)} | "
                     f"{', '.join(experiment.data)} |")
    return "\n".join(lines)


def coverage_table() -> str:
    """Per algorithm with a privacy declaration (:mod:`tff_esn.privacy.coverage`): what secure
    aggregation covers, and the values released as public with secure aggregation and DP on."""
    from tff_esn.privacy.coverage import ALGORITHMS, declaration

    lines = ["| algorithm | covered | public (secure aggregation + DP) |", "| --- | --- | --- |"]
    for name in ALGORITHMS:
        said = declaration(name, secure=True, dp=True)
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
    if COVERAGE_MARKER in markdown:
        markdown = markdown.replace(COVERAGE_MARKER, coverage_table())
    if EXPERIMENTS_MARKER in markdown:
        markdown = markdown.replace(EXPERIMENTS_MARKER, experiments_table())
    return markdown.replace(TABLE_MARKER, algorithms_table())
