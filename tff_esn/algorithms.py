"""Registry of runnable algorithms: what ``tff-esn run ALGORITHM`` and library users can run.

An algorithm is a name, a frozen config dataclass (its typed hyperparameters, validated on
construction) and a ``run`` function ``(dataset, split, config) -> dict`` returning the
sections of ``metrics.json`` it owns: ``"train"``, ``"val"``, ``"test"`` (each a
:func:`tff_esn.metrics.classification_metrics` dict or ``None`` when the split has no such
clients), ``"communication"`` (a :class:`tff_esn.communication.CommunicationCost` as dict)
and optionally ``"extra"``. :func:`run_algorithm` adds ``"algorithm"``, ``"data"``,
``"split"``, ``"config"`` (:func:`flat_config`), ``"seconds"``, ``"baselines"``,
``"warnings"`` (:mod:`tff_esn.run_warnings`) and a ``"privacy"`` section (:data:`tff_esn.privacy.config.NO_PRIVACY` unless the algorithm
reports one)::

    from tff_esn.algorithms import run_algorithm
    from tff_esn.closed_form.configs import IncFedConfig
    from tff_esn.config import ReservoirConfig

    config = IncFedConfig(reservoir=ReservoirConfig(units=50, seed=1), l2=1e-4, backend="numpy")
    record = run_algorithm("incfed", dataset, split, config)

Registering is light: a ``run`` given as ``"module:function"`` is imported when the
algorithm runs, so listing the algorithms (and ``tff-esn --help``) imports no TensorFlow.
:data:`PROVIDERS` lists the modules that register the built-in algorithms (the closed-form
family in :mod:`tff_esn.closed_form.configs`, the TFF-trained thesis models in
:mod:`tff_esn.federated.configs`).
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tff_esn.data.errors import DataError
from tff_esn.privacy.config import NO_PRIVACY, check_privacy
from tff_esn.run_warnings import recording

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset, Split

PROVIDERS = ("tff_esn.closed_form.configs", "tff_esn.federated.configs")
RESULT_SECTIONS = ("train", "val", "test", "communication")

RunFn = Callable[["SequenceDataset", "Split", Any], dict]


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A registered algorithm: ``name``, its ``config`` class, ``run``, one-line ``help``.

    ``run`` is a function ``(dataset, split, config) -> dict`` or its ``"module:function"``
    name (imported on first use: :attr:`run_function`). ``ragged``: ``run`` handles sequences
    of unequal length (``ClientSequences.lengths``); otherwise :func:`run_algorithm` refuses
    such data with a :class:`DataError`. ``tff``: whether a run with a given config runs TFF
    computations (a bool, or a predicate of the config; :meth:`runs_tff`).
    """

    name: str
    config: type
    run: RunFn | str
    help: str = ""
    ragged: bool = False
    tff: bool | Callable[[Any], bool] = True

    def runs_tff(self, config: Any) -> bool:
        """Whether running with ``config`` executes TFF computations: an entry point installs TFF's
        execution context (:func:`tff_esn.runtime.ensure_context`) only then, so a numpy-only run
        never imports TFF nor starts a worker."""
        return bool(self.tff(config)) if callable(self.tff) else self.tff

    @property
    def run_function(self) -> RunFn:
        if callable(self.run):
            return self.run
        module, _, function = self.run.partition(":")
        return getattr(importlib.import_module(module), function)


_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(name: str, config: type, run: RunFn | str, *, help: str = "",
                       ragged: bool = False, tff: bool | Callable[[Any], bool] = True) -> Algorithm:
    """Adds an algorithm; registering the same name twice with another ``run`` is an error.
    ``tff`` (default ``True``, the safe side): see :meth:`Algorithm.runs_tff`."""
    if not isinstance(name, str) or not name or not name.replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"register_algorithm: name must be lower-case letters, digits and '-', got {name!r}.")
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TypeError(f"register_algorithm({name!r}): config must be a dataclass type, got {config!r}.")
    if not (callable(run) or (isinstance(run, str) and ":" in run)):
        raise TypeError(f"register_algorithm({name!r}): run must be a callable or 'module:function', got {run!r}.")
    if not (callable(tff) or isinstance(tff, bool)):
        raise TypeError(f"register_algorithm({name!r}): tff must be a bool or a predicate of the config, got {tff!r}.")
    algo = Algorithm(name, config, run, help, ragged, tff)
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


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; an unknown name raises ``KeyError`` listing the known ones."""
    algorithms = available_algorithms()
    if name not in algorithms:
        raise KeyError(f"unknown algorithm {name!r}; available: {', '.join(algorithms)}.")
    return algorithms[name]


def _nested(field: dataclasses.Field) -> Any:
    """The default of a field holding a config dataclass (e.g. ``reservoir``), else ``None``."""
    default = field.default
    return default if dataclasses.is_dataclass(default) and not isinstance(default, type) else None


def _flag(field: dataclasses.Field) -> str:
    """A field's setting name: ``metadata["flag"]`` (e.g. ``client_lr`` for ``learning_rate``) or its name."""
    return field.metadata.get("flag", field.name)


def config_fields(config: type, prefix: str = "") -> dict[str, dataclasses.Field]:
    """Every flat setting of a config class by name: its own fields and those of its nested
    configs (``reservoir.units`` is ``units``; a nested field with ``metadata={"prefix": "ip_"}``
    names ``ip.mu`` ``ip_mu``; a field with ``metadata={"flag": name}`` is called ``name``), the
    way the flags name them."""
    out: dict[str, dataclasses.Field] = {}
    for field in dataclasses.fields(config):
        inner = _nested(field)
        if inner is not None:
            out.update(config_fields(type(inner), prefix + field.metadata.get("prefix", "")))
        else:
            out[prefix + _flag(field)] = field
    return out


def config_from_flags(config: type, flags: Mapping[str, Any], *, strict: bool = True, prefix: str = "",
                      base: Any = None) -> Any:
    """``config`` built from flat ``flags`` (:func:`config_fields` names; nested configs such as
    ``reservoir`` take theirs from the same mapping, starting from the field's default). Keys
    that are no setting are an error naming them unless ``strict=False``."""
    if strict:
        unknown = sorted(set(flags) - set(config_fields(config, prefix)))
        if unknown:
            raise ValueError(f"{config.__name__}: unknown setting(s) {unknown}; known: "
                             f"{', '.join(sorted(config_fields(config, prefix)))}.")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        inner = _nested(field)
        if inner is not None:
            values[field.name] = config_from_flags(type(inner), flags, strict=False, base=inner,
                                                   prefix=prefix + field.metadata.get("prefix", ""))
        elif prefix + _flag(field) in flags:
            values[field.name] = flags[prefix + _flag(field)]
    return config(**values) if base is None else dataclasses.replace(base, **values)


def flat_config(config: Any, prefix: str = "") -> dict[str, Any]:
    """``dataclasses.asdict(config)`` with nested configs lifted to the top (``units``, ``seed``,
    ``ip_mu``, …: the keys of ``metrics.json``'s ``config`` section, the flags' names)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            out.update(flat_config(value, prefix + field.metadata.get("prefix", "")))
        else:
            out[prefix + _flag(field)] = list(value) if isinstance(value, tuple) else value
    return dict(sorted(out.items()))


def run_algorithm(name: str, dataset: SequenceDataset, split: Split, config: Any, *,
                  test_required: bool = True) -> dict[str, Any]:
    """Runs algorithm ``name`` with ``config`` (an instance of its config class) and returns the
    full ``metrics.json`` record.

    ``{"algorithm", "data", "split", "config", "train", "val", "test", "communication",
    ..., "seconds", "baselines", "warnings", "clients", "split_rule", "versions"}``; a ``run``
    that omits a required section is reported by name. ``warnings`` lists every
    :class:`~tff_esn.run_warnings.RunWarning` said during the run. ``baselines`` holds the
    majority-class and logistic-regression scores on the same split
    (:func:`tff_esn.baselines.baseline_scores`), beside which every result is read.
    ``clients``, ``split_rule`` and ``versions`` say what the run ran on
    (:func:`tff_esn.provenance.run_provenance`).

    Before anything runs, :func:`tff_esn.run_checks.check_run` refuses data and settings that
    would mislead (``test_required=False``: a split without test clients is intended).
    """
    algo = get_algorithm(name)
    if not isinstance(config, algo.config):
        raise TypeError(f"run_algorithm({name!r}): config must be a {algo.config.__name__}, "
                        f"got {type(config).__name__}.")
    check_privacy(name, config.privacy, backend=getattr(config, "backend", "tff"))
    if dataset.ragged and not algo.ragged:
        raise DataError(f"{dataset.source}: X: sequences of unequal length ({dataset.shortest} steps and more), "
                        f"which {name!r} cannot run; cut them to one length (--ragged crop) or use a closed-form "
                        f"algorithm ({', '.join(n for n, a in sorted(_REGISTRY.items()) if a.ragged)}).")
    from tff_esn.baselines import baseline_scores
    from tff_esn.provenance import run_provenance
    from tff_esn.run_checks import check_run

    run = algo.run_function  # imported before the clock starts: ``seconds`` is the run's compute
    with recording() as said:
        check_run(name, dataset, split, config, test_required=test_required)
        start = time.perf_counter()
        result = run(dataset, split, config)
        seconds = time.perf_counter() - start
        baselines = baseline_scores(dataset, split, seed=config.seed)
    missing = [s for s in RESULT_SECTIONS if s not in result]
    if missing:
        raise ValueError(f"algorithm {name!r} returned no {missing} section(s); got {sorted(result)}.")
    record = {"algorithm": name, "data": dataset.source, "split": split.name, "config": flat_config(config)}
    record.update(result)
    record.setdefault("privacy", dict(NO_PRIVACY))
    record["seconds"] = seconds
    record["baselines"] = baselines
    record["warnings"] = said + [w for w in result.get("warnings", ()) if w not in said]
    record.update(run_provenance(split))
    return record
