"""Defaults that depend on the data source, declared in one place.

The config classes' defaults are the seeds' settings, which hold on :data:`SEED_SOURCES`; on own data
the registration's ``own_data`` replaces them wherever the user gave no value
(:func:`source_defaults`, read by :func:`tff_esn.registry.algorithms.resolve_run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tff_esn.registry.algorithms import Algorithm

SEED_SOURCES = ("wesad", "hhar")
"""Source kinds of the seeds' data (``synthetic-`` copies included): the class defaults hold there."""
OWN_DATA_SOURCES = ("npz", "csv", "ts")
"""The command line's sources of own data (``npz:FILE``, ``csv:FILE``, ``ts:DIR/NAME``): no pipeline, own-data
defaults."""
OWN_DATA_ORIGIN = "own-data default"

DATA_KEYS = ("pipeline", "split")
"""Settings of how a source is read and split, beside the config's (a search writes the ones it ran on)."""
SEARCHES = ("reservoir_search",)
"""Settings that name other settings to search: a searched setting given a value is dropped from them."""
FORECAST_STATES = {"state_mode": "all"}
"""What a forecast task (``--task forecast``, or a dataset whose task is forecast) sets over any source's
defaults where the seed's settings do not hold: a prediction at every step needs every step's state."""


FORECAST_WASHOUT = {"washout": "auto"}
"""What a forecast of own data sets where the algorithm can choose its washout on the validation data (the generated
series keep their stated washout): each client's first steps run on a cold reservoir."""


def source_kind(source: str) -> str:
    """``npz`` for ``npz:FILE``, ``wesad`` for ``synthetic-wesad`` and ``wesad:DIR``, …"""
    kind = source.split(":", 1)[0]
    return kind[len("synthetic-"):] if kind.startswith("synthetic-") else kind


def own_data(source: str) -> bool:
    """Whether ``source`` holds a researcher's own data (not the seeds'; no pipeline; own-data defaults apply)."""
    return source_kind(source) not in SEED_SOURCES


def seed_settings_hold(algo: Algorithm, source: str, pipeline: str | None = None) -> bool:
    """Whether ``algo``'s class defaults (its seed's settings) hold on ``source`` read with ``pipeline``: the seeds'
    data read by the algorithm's own seed pipeline. Elsewhere the registration's ``own_data`` applies."""
    if own_data(source):
        return False
    own = algo.pipeline
    return own is None or (pipeline or default_pipeline(source, own)) == own


def source_defaults(algo: Algorithm, source: str, pipeline: str | None = None,
                    task: str | None = None) -> dict[str, Any]:
    """The settings replacing ``algo``'s class defaults on ``source``: ``{}`` where :func:`seed_settings_hold`,
    ``series_data`` on a generated series, else ``own_data``; plus :data:`FORECAST_STATES` for a forecast."""
    if seed_settings_hold(algo, source, pipeline):
        return {}
    from tff_esn.data.source_names import is_series

    series = is_series(source_kind(source))
    defaults = dict(algo.series_data if series and algo.series_data else algo.own_data)
    if (task == "forecast" or series) and "state_mode" in algo.settings():
        defaults.update(FORECAST_STATES)
    washout = algo.settings().get("washout")
    chooses = washout is not None and "auto" in washout.field.metadata.get("choices", ())
    if task == "forecast" and not series and chooses:
        defaults.update(FORECAST_WASHOUT)
    return defaults


def class_objective(source: str, record: Mapping[str, Mapping[str, Any]]) -> str:
    """The class score a run's selection maximises, which its baselines and result check are read on: its config's
    ``objective`` (a resolved run's ``record``), else balanced accuracy on own data and accuracy on the seeds'."""
    given = (record.get("objective") or {}).get("value")
    if given in ("accuracy", "balanced_accuracy", "f1_macro"):
        return given
    return "balanced_accuracy" if own_data(source) else "accuracy"


def default_pipeline(source: str, pipeline: str | None = None) -> str:
    """The pipeline a source is read with: the algorithm's own when it reads the data, else the IncFed paper's."""
    kind = source_kind(source)
    if pipeline is not None and kind in SEED_SOURCES:
        from tff_esn.data.seed_sources.pipelines import PIPELINES  # numpy: only once a run is under way

        if PIPELINES[pipeline].data == kind:
            return pipeline
    return f"incfed-{kind}" if kind in SEED_SOURCES else "incfed-wesad"


def data_settings(algo: Algorithm, source: str,
                  layers: list[tuple[str, Any]]) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """The pipeline and split ``source`` is read with and their ``{"value", "origin"}`` (own data: no pipeline)."""
    own = own_data(source)
    record = {name: {"value": layer[name], "origin": origin} for origin, layer in layers for name in DATA_KEYS
              if layer.get(name) is not None and not (own and name == "pipeline")}
    if own and any(origin == "flag" and layer.get("pipeline") is not None for origin, layer in layers):
        raise ValueError(f"--pipeline: {source_kind(source)}: data has no preprocessing pipeline to choose (it is "
                         "read as the file holds it); drop --pipeline.")
    pipeline = record.get("pipeline", {}).get("value") or default_pipeline(source, algo.pipeline)
    record.setdefault("pipeline", {"value": None if own else pipeline, "origin": "default"})
    record.setdefault("split", {"value": default_split(source, pipeline), "origin": "default"})
    return pipeline, record["split"]["value"], record


def default_split(source: str, pipeline: str) -> str:
    """``npz`` for own data, ``thesis-primal`` for the thesis pipeline, else the pipeline's name."""
    if own_data(source):
        return "npz"
    return "thesis-primal" if pipeline == "thesis" else pipeline
