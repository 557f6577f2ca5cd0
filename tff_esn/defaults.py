"""Defaults that depend on the data source, declared in one place.

The config classes' defaults are the seeds' settings (thesis Table 6.2 and §6.1, the IncFed,
pFedRR and FedIP papers): they hold on the seeds' data (:data:`SEED_SOURCES`:
``synthetic-wesad``, ``wesad:``, ``synthetic-hhar``, ``hhar:``) and the reproduction scripts
rely on them; the thesis models' settings hold on WESAD read by the thesis pipeline only
(:func:`seed_settings_hold`). On a researcher's own data — every other source: ``npz:``,
``ts:``, arrays given in Python — and for the thesis models on the paper pipelines' per-sequence
labels (HHAR, ``incfed-wesad``) they would apply the thesis' input noise, all-step states
without a reservoir bias and the like silently; there :data:`OWN_DATA` replaces them with
neutral settings wherever the user gave no value:

======================  ====================================================================
algorithm               own-data defaults
======================  ====================================================================
fedavg, fedcurv         ``noise_std=0.0`` (no injected noise), ``state_mode="auto"`` and
                        ``reservoir_search`` over leak rate, spectral radius and input scaling
                        (the closed-form selection's choice, ``mean`` or ``last``, before training),
                        ``bias_scaling=1.0`` (a reservoir bias), ``class_weight="balanced"``
                        (weights from the training labels), ``readout_inputs="standardized"``
                        (federated feature means and variances), ``optimizer="sgd"``,
                        ``client_lr="auto"`` (chosen on the validation data) with ``epochs=10``
                        local epochs, at most ``rounds=300`` with ``patience=100`` and
                        ``keep_best`` (the round with the best validation macro-F1); fedcurv
                        also ``penalty="auto"``
thesis-central          ``state_mode="auto"``, ``reservoir_search`` (as fedavg), ``bias_scaling=1.0``,
                        ``class_weight="balanced"``,
                        ``readout_inputs="standardized"``, ``client_lr="auto"``,
                        ``epochs=1000`` with ``patience=100`` (early stopping on the validation
                        macro-F1, a tie to the lower loss, best weights restored)
closed-form algorithms  ``bias_scaling=1.0``; ``l2="auto"``, ``state_mode="auto"`` and
                        ``reservoir_search`` over leak rate, spectral radius and input scaling,
                        chosen by balanced accuracy (``objective``) on the validation data —
                        the validation clients, else folds carved from the training data
                        (:mod:`tff_esn.closed_form.selection`, :mod:`tff_esn.data.carving`);
                        alignment also ``alpha="auto"`` (its weight chosen the same way)
======================  ====================================================================

The thesis' one epoch of Adam at η 0.1 per round, reset every round, leaves GunPoint at the
majority class, and a client Adam restarted every round never settles; plain SGD on standardised
states, its η chosen on the validation data, learns on every UCR/UEA set tried (DEVIATIONS.md).

A value may be any value of the setting, a string option included. :func:`effective_config`
builds the config a run uses from the values given (each with its origin) and records every
effective setting with where it came from — ``metrics.json["settings"]``; :func:`config_for`
is the same for library users. The pipeline and split a source is read with by default
(:func:`default_pipeline`, :func:`default_split`) live here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tff_esn.algorithms import get_algorithm
from tff_esn.settings import config_from_flags, flat_config

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset

SEED_SOURCES = ("wesad", "hhar")
"""Source kinds of the seeds' data (``synthetic-`` copies included): the class defaults hold there."""
OWN_DATA_SOURCES = ("npz", "ts")
"""The command line's sources of own data (``npz:FILE``, ``ts:DIR/NAME``): no pipeline, own-data defaults."""
OWN_DATA_ORIGIN = "own-data default"
ORIGINS = ("flag", "file", OWN_DATA_ORIGIN, "default")
"""Where an effective setting came from, highest precedence first."""

_NEUTRAL_STATES = {"state_mode": "mean", "bias_scaling": 1.0}
_SEARCH = ("leaky", "spectral_radius", "input_scaling")
_THESIS_MODEL = {**_NEUTRAL_STATES, "state_mode": "auto", "reservoir_search": _SEARCH, "class_weight": "balanced",
                 "readout_inputs": "standardized", "client_lr": "auto"}
_THESIS_FEDERATION = {**_THESIS_MODEL, "noise_std": 0.0, "optimizer": "sgd", "epochs": 10, "rounds": 300,
                      "keep_best": True, "patience": 100}
_RIDGE = {**_NEUTRAL_STATES, "state_mode": "auto", "l2": "auto", "objective": "balanced_accuracy",
          "reservoir_search": _SEARCH}
_SEARCHES = ("reservoir_search",)
"""Settings that name other settings to search: a searched setting given a value is dropped from them."""
_CLOSED_FORM = ("centralized", "incfed", "fedavg-ridge", "rls", "partial-incfed", "pfedrr", "fedip", "ensemble",
                "alignment")

_SERIES_RIDGE = {"units": 500, "state_mode": "all", "washout": 100, "bias_scaling": 1.0, "l2": "auto"}
SERIES_DATA: dict[str, dict[str, Any]] = dict.fromkeys(("centralized", "incfed", "fedavg-ridge", "rls"), _SERIES_RIDGE)
"""Per algorithm, the settings that replace its class defaults on a generated series (``narma10``,
``mackey-glass``, …; per-step forecasting): every state after a washout of 100 steps, a 500-unit
reservoir with a bias, λ chosen on the validation client."""

OWN_DATA: dict[str, dict[str, Any]] = {
    "fedavg": _THESIS_FEDERATION,
    "fedcurv": {**_THESIS_FEDERATION, "penalty": "auto"},
    "thesis-central": {**_THESIS_MODEL, "epochs": 1000, "patience": 100},
    **dict.fromkeys(_CLOSED_FORM, _RIDGE),
    "alignment": {**_RIDGE, "alpha": "auto"},
}
"""Per algorithm, the settings (flat names) that replace its class defaults on own data."""


def source_kind(source: str) -> str:
    """``npz`` for ``npz:FILE``, ``wesad`` for ``synthetic-wesad`` and ``wesad:DIR``, …"""
    kind = source.split(":", 1)[0]
    return kind[len("synthetic-"):] if kind.startswith("synthetic-") else kind


def own_data(source: str) -> bool:
    """Whether ``source`` holds a researcher's own data (not the seeds'; no pipeline; :data:`OWN_DATA` applies)."""
    return source_kind(source) not in SEED_SOURCES


def seed_settings_hold(algorithm: str, source: str, pipeline: str | None = None) -> bool:
    """Whether ``algorithm``'s class defaults (its seed's settings) hold on ``source`` read with
    ``pipeline`` (``None``: :func:`default_pipeline`): the seeds' data read by the algorithm's
    own seed pipeline (the thesis models: WESAD through ``thesis``; the closed form: WESAD and
    HHAR through any pipeline). Elsewhere — own data, or the thesis models on HHAR or on a paper
    pipeline's per-sequence labels — :data:`OWN_DATA` applies."""
    if own_data(source):
        return False
    own = get_algorithm(algorithm).pipeline
    return own is None or (pipeline or default_pipeline(source, own)) == own


def source_defaults(algorithm: str, source: str, pipeline: str | None = None) -> dict[str, Any]:
    """The settings that replace ``algorithm``'s class defaults on ``source`` read with ``pipeline``
    (``{}`` where the seed's settings hold, :func:`seed_settings_hold`; :data:`SERIES_DATA` on a
    generated series, else :data:`OWN_DATA`)."""
    if seed_settings_hold(algorithm, source, pipeline):
        return {}
    from tff_esn.data.source_names import is_series

    if is_series(source_kind(source)) and algorithm in SERIES_DATA:
        return dict(SERIES_DATA[algorithm])
    return dict(OWN_DATA.get(algorithm, {}))


def default_pipeline(source: str, pipeline: str | None = None) -> str:
    """The pipeline a source is read with: the algorithm's own (``pipeline``, e.g. the thesis
    models' ``thesis``) when it reads the source's data, else the IncFed-paper pipeline of the
    source (``incfed-wesad`` / ``incfed-hhar``); own-data sources ignore it."""
    kind = source_kind(source)
    if pipeline is not None and kind in SEED_SOURCES:
        from tff_esn.data.pipelines import PIPELINES  # numpy: only once a run is under way

        if PIPELINES[pipeline].data == kind:
            return pipeline
    return f"incfed-{kind}" if kind in SEED_SOURCES else "incfed-wesad"


def default_split(source: str, pipeline: str) -> str:
    """``npz`` (the file's own groups) for own data (npz and ts files), ``thesis-primal`` for the
    thesis pipeline, else the pipeline's name."""
    if own_data(source):
        return "npz"
    return "thesis-primal" if pipeline == "thesis" else pipeline


def effective_config(algorithm: str, source: str, *given: tuple[str, Mapping[str, Any]],
                     pipeline: str | None = None) -> tuple[Any, dict]:
    """``algorithm``'s config on ``source`` read with ``pipeline`` and the record of every effective setting.

    ``given`` are ``(origin, {setting: value})`` layers, highest precedence first (the CLI
    passes ``("flag", …)`` then ``("file", …)``); a setting none of them gives takes the
    source's default (:func:`source_defaults`, origin ``"own-data default"``), else the
    class default (``"default"``). A setting given a value (a flag or a file) is dropped from the
    searches that name it (``reservoir_search``: ``--leaky 0.5`` fixes the leak rate and the
    search keeps the others). Returns ``(config, {setting: {"value", "origin"}})`` with
    every flat setting of the config (:func:`tff_esn.settings.flat_config`); a config that
    refuses the values raises its ``ValueError``.
    """
    algo = get_algorithm(algorithm)
    layers = [*given, (OWN_DATA_ORIGIN, source_defaults(algorithm, source, pipeline))]
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for origin, layer in reversed(layers):
        values.update(layer)
        origins.update(dict.fromkeys(layer, origin))
    given_names = {name for name, origin in origins.items() if origin in ("flag", "file")}
    for search in _SEARCHES:
        if search in values and search not in given_names:
            values[search] = tuple(n for n in values[search] if n not in given_names)
    config = config_from_flags(algo.config, values)
    record = {name: {"value": value, "origin": origins.get(name, "default")}
              for name, value in flat_config(config).items()}
    return config, record


def config_for(algorithm: str, data: SequenceDataset | str, *, pipeline: str | None = None, **settings: Any) -> Any:
    """``algorithm``'s config for ``data`` (a dataset or its source string, read with ``pipeline``,
    ``None``: the default one): ``settings`` (flat names, e.g. ``units=300``) over the source's
    defaults over the class defaults — the config ``tff-esn run ALGO --data SOURCE`` builds from
    the same flags::

        config = config_for("incfed", dataset, units=300, backend="numpy")
        record = run_algorithm("incfed", dataset, split, config)
    """
    source = data if isinstance(data, str) else data.source
    return effective_config(algorithm, source, ("flag", settings), pipeline=pipeline)[0]
