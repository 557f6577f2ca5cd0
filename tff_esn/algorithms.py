"""Registry of runnable algorithms: what ``tff-esn run ALGORITHM`` can run.

An algorithm is a name, a function adding its own command-line flags, and a ``run``
function ``(dataset, split, args) -> dict`` returning the sections of ``metrics.json`` it
owns: ``"train"``, ``"val"``, ``"test"`` (each a :func:`tff_esn.metrics.classification_metrics`
dict or ``None`` when the split has no such clients), ``"communication"`` (a
:class:`tff_esn.communication.CommunicationCost` as dict) and optionally ``"extra"``.
:func:`run_algorithm` adds ``"algorithm"``, ``"data"``, ``"split"``, ``"config"`` and
``"seconds"``, and a ``"privacy"`` section (:data:`tff_esn.privacy.options.NO_PRIVACY` unless the
algorithm reports one).

Provider modules register their algorithms when imported; :data:`PROVIDERS` lists them
(the closed-form family in :mod:`tff_esn.closed_form.commands`, the TFF-trained thesis models in
``tff_esn.federated``). A provider that is not installed yet is skipped.

``args`` always carries the common flags of ``tff-esn run`` (see
:func:`add_common_arguments`); :func:`reservoir_config_from_args` turns them into a
:class:`~tff_esn.config.ReservoirConfig`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import time
from collections.abc import Callable
from typing import Any

from tff_esn.baselines import baseline_scores
from tff_esn.config import ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.privacy.options import NO_PRIVACY
from tff_esn.reservoir import STATE_MODES

PROVIDERS = ("tff_esn.closed_form.commands", "tff_esn.federated")
RESULT_SECTIONS = ("train", "val", "test", "communication")

AddArguments = Callable[[argparse.ArgumentParser], None]
RunFn = Callable[[SequenceDataset, Split, argparse.Namespace], dict]


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A registered algorithm: ``name``, its flags (``add_arguments``), ``run``, one-line ``help``.

    ``ragged``: ``run`` handles sequences of unequal length (``ClientSequences.lengths``);
    otherwise :func:`run_algorithm` refuses such data with a :class:`DataError`.
    """

    name: str
    add_arguments: AddArguments
    run: RunFn
    help: str = ""
    ragged: bool = False


_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(name: str, add_arguments: AddArguments, run: RunFn, *, help: str = "",
                       ragged: bool = False) -> Algorithm:
    """Adds an algorithm; registering the same name twice with another ``run`` is an error."""
    if not isinstance(name, str) or not name or not name.replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"register_algorithm: name must be lower-case letters, digits and '-', got {name!r}.")
    if not callable(add_arguments) or not callable(run):
        raise TypeError(f"register_algorithm({name!r}): add_arguments and run must be callables.")
    algo = Algorithm(name, add_arguments, run, help, ragged)
    known = _REGISTRY.get(name)
    if known is not None and known.run is not run:
        raise ValueError(f"register_algorithm: {name!r} is already registered by {known.run.__module__}.")
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


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every algorithm: reservoir hyperparameters, readout, states, seed."""
    d = ReservoirConfig()
    g = parser.add_argument_group("reservoir")
    g.add_argument("--units", type=int, default=d.units, help="reservoir units N_R (default %(default)s)")
    g.add_argument("--spectral-radius", type=float, default=d.spectral_radius, help="ρ(Ŵ) (default %(default)s)")
    g.add_argument("--leaky", type=float, default=d.leaky, help="leaking rate a ∈ (0, 1] (default %(default)s)")
    g.add_argument("--input-scaling", type=float, default=d.input_scaling, help="default %(default)s")
    g.add_argument("--input-connectivity", type=float, default=d.input_connectivity,
                   help="fraction in (0, 1] of inputs per unit (default %(default)s)")
    g.add_argument("--recurrent-connectivity", type=float, default=d.recurrent_connectivity,
                   help="fraction in (0, 1] of units feeding each unit (default %(default)s)")
    g.add_argument("--bias-scaling", type=float, default=d.bias_scaling, help="reservoir bias scale (default %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed, help="seed of the reservoir and of every random choice")
    g = parser.add_argument_group("readout and states")
    g.add_argument("--l2", type=float, default=1e-6, help="ridge λ ≥ 0 (default %(default)s)")
    g.add_argument("--state-mode", choices=STATE_MODES, default="all",
                   help="states entering the readout: every step after washout (all), last, or mean")
    g.add_argument("--washout", type=int, default=0, help="initial steps dropped (default %(default)s)")
    g.add_argument("--no-readout-bias", dest="readout_bias", action="store_false",
                   help="no constant-1 input (readout bias) appended to the states")


def reservoir_config_from_args(args: argparse.Namespace) -> ReservoirConfig:
    """The :class:`ReservoirConfig` of the common flags (validated by the dataclass)."""
    return ReservoirConfig(
        units=args.units, spectral_radius=args.spectral_radius, leaky=args.leaky,
        input_scaling=args.input_scaling, input_connectivity=args.input_connectivity,
        recurrent_connectivity=args.recurrent_connectivity, bias_scaling=args.bias_scaling, seed=args.seed,
    )


def _config_of(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in sorted(vars(args).items()) if not callable(v) and k not in ("command", "algorithm")}


def run_algorithm(name: str, dataset: SequenceDataset, split: Split, args: argparse.Namespace) -> dict[str, Any]:
    """Runs algorithm ``name`` and returns the full ``metrics.json`` record.

    ``{"algorithm", "data", "split", "config", "train", "val", "test", "communication",
    ..., "seconds", "baselines"}``; a ``run`` that omits a required section is reported by
    name. ``baselines`` holds the majority-class and logistic-regression scores on the same
    split (:func:`tff_esn.baselines.baseline_scores`), beside which every result is read.
    """
    algo = get_algorithm(name)
    if dataset.ragged and not algo.ragged:
        raise DataError(f"{dataset.source}: X: sequences of unequal length ({dataset.shortest} steps and more), "
                        f"which {name!r} cannot run; cut them to one length (--ragged crop) or use a closed-form "
                        f"algorithm ({', '.join(n for n, a in sorted(_REGISTRY.items()) if a.ragged)}).")
    start = time.perf_counter()
    result = algo.run(dataset, split, args)
    seconds = time.perf_counter() - start
    missing = [s for s in RESULT_SECTIONS if s not in result]
    if missing:
        raise ValueError(f"algorithm {name!r} returned no {missing} section(s); got {sorted(result)}.")
    record = {"algorithm": name, "data": dataset.source, "split": split.name, "config": _config_of(args)}
    record.update(result)
    record.setdefault("privacy", dict(NO_PRIVACY))
    record["seconds"] = seconds
    record["baselines"] = baseline_scores(dataset, split, seed=getattr(args, "seed", 0))
    return record
