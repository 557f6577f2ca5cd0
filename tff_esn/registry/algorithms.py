"""Registry of runnable algorithms: what ``tff-esn run ALGORITHM`` and library users can run.

An entry (:func:`register_algorithm`, :class:`Algorithm`) declares an algorithm's config class, data,
privacy support, communication cost and whether it runs TFF; its ``run(dataset, split, config)`` returns
its ``metrics.json`` sections, and :func:`run_algorithm` adds the rest. A ``"module:function"`` run is
imported when the algorithm runs; :data:`PROVIDERS` registers the built-in ones.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tff_esn.data.errors import DataError
from tff_esn.registry.defaults import (DATA_KEYS, OWN_DATA_ORIGIN, SEARCHES, class_objective, data_settings,
                                      source_defaults)
from tff_esn.privacy.coverage import publish, selection_declared
from tff_esn.privacy.config import NO_PRIVACY, NONE, PrivacyConfig, PrivacySupport
from tff_esn.common.run_warnings import merged, recording
from tff_esn.common.settings import Setting, config_fields, config_from_flags, flat_config, settings
from tff_esn.common.tasks import REAL_KINDS, REAL_OBJECTIVE, TASK_KINDS

__all__ = ["LABEL_KINDS", "PROVIDERS", "Algorithm", "ResolvedRun", "available_algorithms", "check_privacy",
           "check_takes", "config_fields", "config_from_flags", "flat_config", "get_algorithm", "names_where",
           "register_algorithm", "resolve_run", "run_algorithm"]

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset, Split

PROVIDERS = ("tff_esn.closed_form.configs", "tff_esn.federated.configs")
RESULT_SECTIONS = ("train", "val", "test", "communication")
PROVENANCE = ("algorithm", "data", "split", "config", "l2_selection", "selection", "privacy", "extends",
              "standardization")
"""The record's sections a run's model keeps as its provenance (those the run wrote)."""

RunFn = Callable[["SequenceDataset", "Split", Any], dict]


LABEL_KINDS = ("binary", "multiclass")
"""Label kinds an algorithm can take: two classes, or K > 2 classes."""


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A registered algorithm: its ``name``, frozen ``config`` class (its flags), ``run``, ``help`` line, the data it
    takes, whether it runs TFF, its ``privacy`` support, ``communication`` cost and its own-data settings."""

    name: str
    config: type
    run: RunFn | str
    help: str = ""
    ragged: bool = False
    labels: tuple[str, ...] = LABEL_KINDS
    tff: bool | Callable[[Any], bool] = True
    privacy: PrivacySupport = NONE
    communication: Callable[..., Any] | str | None = None
    pipeline: str | None = None
    tasks: tuple[str, ...] = ("classify",)
    pooled: bool = False
    own_data: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    series_data: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def runs_tff(self, config: Any) -> bool:
        """Whether running with ``config`` executes TFF computations (only then is TFF's context installed)."""
        return bool(self.tff(config)) if callable(self.tff) else self.tff

    @property
    def run_function(self) -> RunFn:
        return _resolve(self.run)

    @property
    def communication_function(self) -> Callable[..., Any] | None:
        """The function computing the run's :class:`~tff_esn.common.communication.CommunicationCost`."""
        return self.communication and _resolve(self.communication)

    def settings(self) -> dict[str, Setting]:
        """The settings a user can set: the config's, without the privacy ones it does not implement."""
        return {name: s for name, s in settings(self.config).items()
                if s.owner is not PrivacyConfig or name in self.privacy.settings}


def _resolve(target: Callable | str) -> Callable:
    if callable(target):
        return target
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(name: str, config: type, run: RunFn | str, **entry: Any) -> Algorithm:
    """Adds an algorithm (``entry``: the other fields of :class:`Algorithm`); one name with two ``run`` errs."""
    algo = Algorithm(name, config, run, **entry)
    if not name or not name.replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"register_algorithm: name must be lower-case letters, digits and '-', got {name!r}.")
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TypeError(f"register_algorithm({name!r}): config must be a frozen dataclass type, got {config!r}.")
    if not (algo.labels and algo.tasks and set(algo.labels) <= set(LABEL_KINDS) and set(algo.tasks) <= set(TASK_KINDS)):
        raise ValueError(f"register_algorithm({name!r}): labels must be among {LABEL_KINDS} and tasks among "
                         f"{TASK_KINDS}, got {algo.labels!r}, {algo.tasks!r}.")
    if algo.privacy and not algo.privacy.covers:
        raise ValueError(f"register_algorithm({name!r}): its privacy declares no 'covers' (what secure aggregation "
                         "and DP protect, written to metrics.json).")
    known = _REGISTRY.get(name)
    if known is not None and known.run != run:
        raise ValueError(f"register_algorithm: {name!r} is already registered with run {known.run!r}.")
    _REGISTRY[name] = algo
    return algo


def _load_providers() -> None:
    for module in PROVIDERS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise


def available_algorithms() -> dict[str, Algorithm]:
    """Every registered algorithm by name (importing the provider modules first)."""
    _load_providers()
    return dict(sorted(_REGISTRY.items()))


def names_where(predicate: Callable[[Algorithm], bool]) -> list[str]:
    """Names of the registered algorithms where ``predicate`` holds, in :data:`PROVIDERS`, then registration order."""
    _load_providers()

    def provider(item: tuple[int, Algorithm]) -> tuple[int, int]:
        index, algo = item
        module = algo.config.__module__
        return (PROVIDERS.index(module) if module in PROVIDERS else len(PROVIDERS), index)

    ordered = sorted(enumerate(_REGISTRY.values()), key=provider)
    return [algo.name for _, algo in ordered if predicate(algo)]


def federated_ridge(algo: Algorithm) -> bool:
    """Whether ``algo`` federates a ridge readout (it has the ``l2`` setting and does not pool the data)."""
    return not algo.pooled and "l2" in algo.settings()


def default_algorithms() -> tuple[str, str]:
    """The registry's first federated ridge readout and first gradient-trained federated model."""
    return (names_where(federated_ridge)[0], names_where(lambda a: not a.pooled and "client_lr" in a.settings())[0])


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; an unknown name raises ``KeyError`` listing the known ones."""
    algorithms = available_algorithms()
    if name not in algorithms:
        raise KeyError(f"unknown algorithm {name!r}; available: {', '.join(algorithms)}.")
    return algorithms[name]


def check_privacy(algo: Algorithm, privacy: PrivacyConfig, *, backend: str = "tff") -> None:
    """``ValueError`` when ``algo`` (run with ``backend``) does not implement what ``privacy`` asks."""
    support, algorithm = algo.privacy, algo.name
    defaults = PrivacyConfig()
    unused = [f"--{f.name.replace('_', '-')}" for f in dataclasses.fields(PrivacyConfig)
              if f.name not in support.settings and getattr(privacy, f.name) != getattr(defaults, f.name)]
    if not support and (unused or privacy.requested):
        supported = ", ".join(names_where(lambda a: bool(a.privacy)))
        raise ValueError(f"{algorithm}: secure aggregation / DP are implemented for {supported}; "
                         "drop the --secure-*/--dp-* flags.")
    reasons = dict(support.refused)
    for flag in unused:
        if flag[2:].replace("-", "_") in reasons:
            raise ValueError(reasons[flag[2:].replace("-", "_")])
    if unused:
        verb = "does" if len(unused) == 1 else "do"
        raise ValueError(f"{algorithm}: {', '.join(unused)} {verb} not apply to its privacy "
                         f"(it reads {', '.join('--' + s.replace('_', '-') for s in support.settings)}).")
    if not privacy.requested:
        return
    if support.local_only and privacy.dp_requested and privacy.dp_model != "local":
        raise ValueError(f"{algorithm}: a client's upload depends on its data through its mask / completion too, so "
                         "only each client noising its own statistics first is DP: add --dp-model local.")
    if support.local_only and privacy.dp_requested and privacy.secure_aggregation and privacy.secure_range is None:
        raise ValueError(f"{algorithm}: the clients' noisy, floored and masked statistics have no derived bound for "
                         "the secure sum; give --secure-range R (values beyond ±R are clipped and counted).")
    if backend not in ("tff", "auto") and privacy.secure_aggregation:  # auto: TFF's (federated.configs.resolve_backend)
        raise ValueError(f"--backend {backend}: secure aggregation runs inside the TFF computation; use --backend tff.")
    if backend not in ("auto", *support.dp_backends):
        raise ValueError(f"--backend {backend}: {algorithm}'s DP runs inside the TFF computation; use --backend tff.")


def check_takes(algo: Algorithm, dataset: SequenceDataset) -> None:
    """A one-line :class:`DataError` when ``algo`` does not take ``dataset``'s task, labels or unequal lengths."""
    name, task, kind = algo.name, dataset.task.kind, "multiclass" if dataset.n_classes > 2 else "binary"
    if task not in algo.tasks:
        raise DataError(f"{dataset.source}: --task {task}: {name!r} serves {' and '.join(algo.tasks)} only; "
                        f"use one that serves {task}: {', '.join(names_where(lambda a: task in a.tasks))}.")
    if not dataset.task.real and kind not in algo.labels:
        raise DataError(f"{dataset.source}: y: {dataset.n_classes} classes, but {name!r} takes "
                        f"{' or '.join(algo.labels)} labels only; use an algorithm that takes {kind} labels "
                        f"({', '.join(names_where(lambda a: kind in a.labels))}).")
    if dataset.ragged and not algo.ragged:
        raise DataError(f"{dataset.source}: X: sequences of unequal length ({dataset.shortest} steps and more), "
                        f"which {name!r} cannot run; cut them to one length (--ragged crop) or use a closed-form "
                        f"algorithm ({', '.join(names_where(lambda a: a.ragged))}).")


@dataclasses.dataclass(frozen=True)
class ResolvedRun:
    """A run as :func:`resolve_run` settles it: registration, typed config, ``record``, settings' origins, TFF use."""

    algorithm: Algorithm
    config: Any
    record: Mapping[str, Mapping[str, Any]]
    tff: bool
    pipeline: str | None = None
    split: str | None = None


def resolve_run(algorithm: Algorithm | str, data: SequenceDataset | str, *given: tuple[str, Mapping[str, Any]],
                pipeline: str | None = None, task: str | None = None, config: Any = None,
                **settings: Any) -> ResolvedRun:
    """``algorithm``'s run on ``data``: ``settings`` (origin ``flag``) over the ``given`` layers (the first wins)
    over the source's defaults over the class defaults (or ``config``); the privacy asked is checked::

        record = run_algorithm(resolve_run(name, dataset, units=300), dataset, split)
    """
    algo = algorithm if isinstance(algorithm, Algorithm) else get_algorithm(algorithm)
    source, task = (data, task) if isinstance(data, str) else (data.source, data.task.kind)
    layers = [("flag", settings), *given][::-1]
    if isinstance(data, str):
        read = [("flag", {"pipeline": pipeline})] if pipeline is not None else []
        pipeline, split, data_record = data_settings(algo, source, layers + read)
    else:
        split, data_record = None, {}
    own = (OWN_DATA_ORIGIN, source_defaults(algo, source, pipeline, task))
    if config is not None:
        if not isinstance(config, algo.config):
            raise TypeError(f"{algo.name}: config must be a {algo.config.__name__}, got {type(config).__name__}.")
        layers = [("config", flat_config(config))]
    layers.insert(0, own)
    values = {name: value for _, layer in layers for name, value in layer.items() if name not in DATA_KEYS}
    origins = {name: origin for origin, layer in layers for name in layer}
    given_names = {name for name, origin in origins.items() if origin in ("flag", "file")}
    for search in SEARCHES:
        if search in values and search not in given_names:
            values[search] = tuple(n for n in values[search] if n not in given_names)
    config = config if config is not None else config_from_flags(algo.config, values)
    record = {name: {"value": value, "origin": origins.get(name, "default")}
              for name, value in flat_config(config).items()}
    if "objective" in record and task in REAL_KINDS:  # what the selection maximises on real targets
        record["objective"] = {"value": REAL_OBJECTIVE, "origin": f"task {task}"}
    check_privacy(algo, getattr(config, "privacy", PrivacyConfig()), backend=getattr(config, "backend", "tff"))
    return ResolvedRun(algo, config, {**record, **data_record}, algo.runs_tff(config), pipeline, split)


class RunRecord(dict):
    """A run's ``metrics.json`` record (a dict) and :attr:`model`, the trained
    :class:`~tff_esn.esn.model.Model` whose scores its ``train``/``val``/``test`` sections are."""

    def __init__(self, record: Mapping[str, Any], model: Any):
        super().__init__(record)
        self.model = model


def run_algorithm(run: ResolvedRun, dataset: SequenceDataset, split: Split, *, test_required: bool = True,
                  start: Callable[[ResolvedRun], Any] | None = None,
                  partition: Mapping[str, Any] | None = None, standardize: str = "auto",
                  free_run: int | None = None, series_range: tuple[float, ...] | None = None) -> RunRecord:
    """Runs :func:`resolve_run`'s ``run`` after its checks and ``start(run)``; returns the ``metrics.json`` record
    (with ``partition``, :func:`~tff_esn.data.partition.partition_dataset`'s record of the dealt clients) and the
    trained model, its provenance and metrics the record's. ``standardize`` (:mod:`tff_esn.runs.standardize`):
    the run sees standardised inputs and targets, its metrics are in the series' units (and standardised);
    ``series_range``: by stated public ranges, not the training clients' statistics (DP or not).
    ``free_run``: the model's free runs of that many steps on the validation and test series are scored
    (:mod:`tff_esn.runs.free_run`)."""
    algo, config, name = run.algorithm, run.config, run.algorithm.name
    from tff_esn.runs import free_run as free_runs, standardize as scaling_of
    from tff_esn.runs.baselines import baseline_scores
    from tff_esn.runs.provenance import run_provenance
    from tff_esn.common.result_check import check_result
    from tff_esn.registry.run_checks import check_run

    function = algo.run_function  # imported before the clock starts: ``seconds`` is the run's compute
    private = getattr(config, "privacy", PrivacyConfig()).dp_requested
    with recording() as said:
        check_takes(algo, dataset)
        check_run(run, dataset, split, test_required=test_required)
        if free_run is not None:
            free_runs.check_free_run(free_run, dataset, split, getattr(getattr(config, "model", config), "washout", 0))
        scaling = scaling_of.scaling_for(standardize, dataset, split, dp=private, series_range=series_range)
        if start is not None:
            start(run)
        start_time = time.perf_counter()
        result = function(dataset if scaling is None else scaling_of.scaled(dataset, scaling), split, config)
        seconds = time.perf_counter() - start_time
        if scaling is not None:
            result.update({g: scaling_of.in_own_units(result[g], scaling)
                           for g in ("train", "val", "test") if g in result})
        used = result.get("model")  # the washout the model uses (a choice of ``auto``), else the configured one
        washout = used.spec.washout if used is not None else getattr(getattr(config, "model", config), "washout", 0)
        objective = class_objective(dataset.source, run.record)
        baselines = baseline_scores(dataset, split, seed=getattr(config, "seed", 0),
                                    washout=washout if isinstance(washout, int) else 0, objective=objective)
        checked_result = check_result(name, result, {} if private else baselines, dataset.task, objective=objective)
        if private and "privacy" in result:
            result["privacy"] = selection_declared(result["privacy"], run.record)
    model = result.pop("model", None)
    if model is not None and scaling is not None:
        model = model.replace(inputs=scaling.inputs, outputs=scaling.target)
    if free_run is not None and model is not None:
        from tff_esn.data.seed_sources.generators import LYAPUNOV

        result["free_run"] = free_runs.free_run_scores(model, dataset, split, free_run,
                                                       lyapunov=LYAPUNOV.get(dataset.source))
    missing = [s for s in RESULT_SECTIONS if s not in result]
    if missing:
        raise ValueError(f"algorithm {name!r} returned no {missing} section(s); got {sorted(result)}.")
    if model is None:
        raise ValueError(f"algorithm {name!r} returned no model: its run function must return the trained "
                         "tff_esn.esn.model.Model under result['model'] (closed form: Run.report(run.model(...))).")
    record = {"algorithm": name, "data": dataset.source, "split": split.name, "config": dict(run.record)}
    record.update(result)
    if partition is not None:
        record["partition"] = dict(partition)
    record.setdefault("privacy", dict(NO_PRIVACY))
    record["seconds"] = seconds
    record["baselines"] = baselines
    record["result_check"] = checked_result
    record["standardization"] = scaling.to_dict() if scaling is not None else {"applied": False, "mode": standardize}
    record["warnings"] = merged(said, result.get("warnings", ()))
    record.update(run_provenance(split))
    reservoir = getattr(getattr(config, "model", config), "reservoir", None)
    if reservoir is not None:  # the graph of the configured reservoir's Ŵ (a deep ESN's whole block matrix)
        from tff_esn.esn.topologies import graph_metrics
        from tff_esn.esn.weights import ReservoirWeights

        graph = graph_metrics(ReservoirWeights.from_config(reservoir, len(dataset.feature_names)).recurrent)
        record["reservoir_graph"] = {k: v for k, v in graph.items() if k != "degree_histogram"}
    record = publish(record)
    model = model.replace(provenance={k: record[k] for k in PROVENANCE if k in record},
                          metrics={g: record[g] for g in ("train", "val", "test") if g in record})  # DP: no train
    return RunRecord(record, model)
