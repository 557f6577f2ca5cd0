"""A federated training run of the thesis model (thesis §6.1): :func:`run_federated` runs the learning process
round by round, evaluates, logs and checkpoints each round (a resumed run ends as an uninterrupted one)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common import streams
from tff_esn import runtime
from tff_esn.registry.algorithms import Algorithm, get_algorithm
from tff_esn.common.communication import CommunicationCost
from tff_esn.common.io import atomic_write
from tff_esn.runs.identity import (CANDIDATE, check_identity, resumable_settings, resume_changes, run_identity,
                                   saved_record)
from tff_esn.runs.run_folder import run_lock
from tff_esn.data.cache import cache_root
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated import clients as client_data
from tff_esn.federated.checkpoints import RoundCheckpoint
from tff_esn.federated.client_work import ClientFilter
from tff_esn.closed_form.selection import AUTO
from tff_esn.esn.ridge import RidgeStats
from tff_esn.federated.configs import (DEFAULT_PENALTY, PENALTY_GRID, FedAvgConfig, chosen_index, client_lr_choices,
                                       for_data, resolve_backend)
from tff_esn.federated.init_from import InitModel, load_init_model
from tff_esn.esn.model import readout_probabilities
from tff_esn.federated.model import build_thesis_model, group_reports, thesis_loss, thesis_model
from tff_esn.federated.processes import build_process
from tff_esn.federated.round_log import RoundLog
from tff_esn.federated.training_check import closed_form_reference, diverged_round, training_flags
from tff_esn.esn.standardization import Standardization, federated_standardization
from tff_esn.common.metrics import NonFiniteScores, classification_metrics
from tff_esn.common.tasks import Task
from tff_esn.esn.model import Model
from tff_esn.privacy.accounting import RoundEvent
from tff_esn.privacy.closed_form import secure_ridge_sum
from tff_esn.privacy import noise_seed
from tff_esn.privacy.coverage import published_row
from tff_esn.privacy.learning import LearningPrivacy, lower_secure_process, secure_clipped
from tff_esn.privacy.sampling import POISSON, poisson_clients
from tff_esn.common.progress import progress_bar
from tff_esn.common.run_warnings import warn

tff = runtime.load_tff()

def sample_clients(ids: Sequence[str], m: int, seed: int, round_num: int) -> list[str]:
    """The m clients of round ``round_num``: uniform without replacement, a pure function of (seed, round)."""
    rng = np.random.default_rng(streams.FEDERATED_SAMPLE.seed(seed, round_num))
    picks = rng.choice(len(ids), size=min(m, len(ids)), replace=False)
    return [ids[i] for i in sorted(picks)]


@dataclasses.dataclass
class _EvalSet:
    """A group's readout inputs (the model's states, standardised as its readout reads them) and flat labels."""

    states: np.ndarray
    labels: np.ndarray
    task: Task

    @property
    def real(self) -> bool:
        return self.task.real

    @classmethod
    def of(cls, dataset: SequenceDataset, ids: Sequence[str], model: Model) -> _EvalSet | None:
        """The pooled clients ``ids`` (``None`` for none) through ``model``'s reservoir (:meth:`Model.states`)."""
        if not ids:
            return None
        pooled = dataset.pooled(ids)
        states = model.states(pooled.x, pooled.lengths).astype(np.float32)
        standardization = model.members[0].readout.standardization
        return cls(states if standardization is None else standardization.apply(states),
                   model.labels(pooled.y, len(pooled)), dataset.task)

    def scores(self, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """The readout's probabilities: (n,) for two classes, (n, K) for more; real outputs (n,)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return readout_probabilities(self.states, kernel, bias, linear=self.real)

    def report(self, kernel: np.ndarray, bias: np.ndarray, n_classes: int) -> dict[str, Any]:
        """The task's report (:meth:`~tff_esn.common.tasks.Task.report`) of the readout ``(kernel, bias)``."""
        return self.task.report(self.labels, self.scores(kernel, bias), n_classes)

    def row(self, kernel: np.ndarray, bias: np.ndarray, n_classes: int) -> dict[str, float]:
        """A round's metrics (NaN if undefined); classes add the mean cross-entropy ``−log p(true class)``."""
        metrics = (self.report(kernel, bias, n_classes) if self.real
                   else classification_metrics(self.labels, self.scores(kernel, bias), n_classes))
        row = {k: (math.nan if v is None else float(v)) for k, v in metrics.items() if k != "n"}
        if not self.real:
            p = self.scores(kernel, bias)
            p = np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p
            row["log_loss"] = float(-np.mean(np.log(np.maximum(p[np.arange(len(self.labels)), self.labels], 1e-12))))
        return row


def learning_privacy(config: FedAvgConfig, clients: int,
                     noise_multiplier: float | None = None) -> LearningPrivacy | None:
    """The DP / secure aggregation of ``config.privacy`` over ``clients`` training clients (``None`` without); under
    DP with z calibrated for ``config.rounds``, or a resumed run's checkpointed ``noise_multiplier``."""
    settings = config.privacy
    if not settings.requested:
        return None
    z, seed = None, 0
    if settings.dp_requested:
        z = (settings.noise_multiplier(config.rounds, min(1.0, config.clients_per_round / clients))
             if noise_multiplier is None else noise_multiplier)
        noise_seed.warn_no_noise(z)
        seed = noise_seed.mechanism_seed(settings.dp_seed)
    return LearningPrivacy(noise_multiplier=z, clip=0.1 if settings.dp_clip is None else settings.dp_clip,
                           adaptive=settings.dp_adaptive_clip, secure=settings.secure_aggregation,
                           delta=settings.dp_delta, seed=seed, seed_known=settings.dp_seed is not None)


def discriminator_filter(config: FedAvgConfig) -> ClientFilter | None:
    """The client filter of ``config.discriminator`` (``None``: none) via the ``tff_esn.client_filters`` entry point."""
    if not config.discriminator:
        return None
    loaders = {ep.name: ep for ep in entry_points(group="tff_esn.client_filters")}
    if "discriminator" not in loaders:
        raise ValueError("discriminator: no 'discriminator' loader in the tff_esn.client_filters entry-point group "
                         "(is the discriminator package installed?).")
    return loaders["discriminator"].load()(config.discriminator, threshold=config.discriminator_threshold,
                                           units=config.model.reservoir.readout_units, outputs=config.model.n_outputs)


def _validation_choice(row: dict[str, Any]) -> tuple[float, float]:
    """A round's choice key from its row: validation macro-F1, then cross-entropy (real targets: −MSE, MSE)."""
    if "val_rmse" in row:
        return -row["val_rmse"] ** 2, row["val_rmse"] ** 2
    return row.get("val_f1_macro", math.nan), row.get("val_log_loss", math.nan)


class _BestRound:
    """The round with the best validation score so far and its readout, kept in ``DIR/best_round.npz``."""

    def __init__(self, out: Path | None, resumed: bool):
        self.path = None if out is None else out / "best_round.npz"
        self.round, self.score, self.loss, self.kernel, self.bias = 0, -math.inf, math.inf, None, None
        if resumed and self.path is not None and self.path.exists():
            with np.load(self.path) as saved:
                self.round, self.score, self.loss = int(saved["round"]), float(saved["score"]), float(saved["loss"])
                self.kernel, self.bias = saved["kernel"], saved["bias"]

    def offer(self, score: float, loss: float, round_num: int, kernel: np.ndarray, bias: np.ndarray) -> None:
        if not (score > self.score or (score == self.score and loss < self.loss)):
            return
        self.round, self.score, self.loss, self.kernel, self.bias = round_num, score, loss, kernel, bias
        if self.path is not None:
            with atomic_write(self.path) as fh:
                np.savez(fh, round=round_num, score=score, loss=loss, kernel=kernel, bias=bias)


def run_federated(dataset: SequenceDataset, split: Split, config: FedAvgConfig, *,
                  client_filter: ClientFilter | None = None, identity: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``metrics.json`` sections of FedAvg or FedCurv (thesis Alg. 1–2) on ``split.train`` and the trained
    :class:`~tff_esn.esn.model.Model` (``result["model"]``: the kept readout), whose scores the sections are; more
    ``clients_per_round`` than training clients runs (and records in ``extra``) one round of every client. Its
    checkpoints record the run's ``identity`` (default: :func:`~tff_esn.runs.identity.run_identity` of these
    arguments)."""
    if identity is None and config.out is not None:
        identity = run_identity(config, dataset, split)
    dp = config.privacy.dp_requested
    if config.clients_per_round > len(split.train):
        warn(f"clients_per_round {config.clients_per_round}: there are {len(split.train)} training clients; each "
             f"round trains all {len(split.train)} (extra.clients_per_round)")
        config = dataclasses.replace(config, clients_per_round=len(split.train))
    if dp and not dataset.task.real and config.model.class_weight == "balanced":
        warn("DP: class_weight 'balanced' would be computed from the training clients' label counts outside the DP "
             "mechanism; uniform class weights are used (give explicit --class-weight values to set them)")
        config = dataclasses.replace(config, model=config.model.replace(class_weight=(1.0,) * dataset.n_classes))
    config = dataclasses.replace(config, model=for_data(config.model, dataset, split.train,
                                                        faithful=config.states == "faithful"))
    if dp and config.model.standardized:
        warn("readout_inputs 'standardized': under DP the clients' feature statistics would be a release outside "
             "the rounds' privacy accounting; the readout trains on the raw reservoir states.")
        config = dataclasses.replace(config, model=config.model.replace(readout_inputs="raw"))
    init = None if config.init_from is None else load_init_model(config.init_from, dataset, config.model)
    if client_filter is not None and config.discriminator:
        raise ValueError("run_federated: give client_filter or config.discriminator, not both.")
    client_filter = client_filter or discriminator_filter(config)
    workers = runtime.current_workers()
    backend = resolve_backend(config.backend, secure=config.privacy.secure_aggregation, workers=workers)
    with contextlib.ExitStack() as stack:
        if config.out is not None:
            stack.enter_context(run_lock(config.out))
        saved = _resumed_record(config, identity)  # another run's folder is refused before any harvest
        calibration = (saved or {}).get("calibration") or {}
        privacy = learning_privacy(config, len(split.train), calibration.get("noise_multiplier"))
        cache_dir = None
        if config.states == "cached" and config.cache_dir is not None:
            cache_dir = cache_root(config.cache_dir) / "federated-states"
        elif config.states == "cached" and runtime.on_this_host(workers):
            cache_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="tff_esn-states-"))
        data = _client_data(dataset, split, config, cache_dir, init)
        config, selection, result = select_settings(config, split, privacy, lambda candidate: _run(
            dataset, split, candidate, privacy, client_filter=client_filter, data=data, backend=backend,
            identity=_candidate_identity(identity, candidate)))
        result = result or _run(dataset, split, config, privacy, client_filter=client_filter, data=data,
                                backend=backend, identity=identity)
        result["extra"]["selection"] = selection
        if init is not None:
            result["extra"]["init_from"] = init.record()
        reference = None if privacy is not None or dataset.task.real else _reference(dataset, split, data, result)
        result["extra"]["closed_form_reference"] = reference
        result["training_check"] = training_flags(
            config.algorithm, result, selection=selection, budget=config.rounds, reference=reference,
            kept=result["extra"]["kept_round"] if config.keep_best and data.groups["val"] is not None else None,
            penalty=config.penalty if config.curvature else None, diverged=result["extra"]["diverged_round"])
        return result


def _reference(dataset: SequenceDataset, split: Split, data: _ClientData, result: dict[str, Any]) -> dict[str, Any]:
    """:func:`~tff_esn.federated.training_check.closed_form_reference` on the states the result's readout reads,
    harvested one training client at a time."""
    train = ((part.states, part.labels) for part in (_EvalSet.of(dataset, (cid,), result["model"])
                                                     for cid in split.train))
    groups = {name: (group.states, group.labels) for name, group in data.groups.items() if group is not None}
    return closed_form_reference(train, groups, dataset.n_classes)


def _resumed_record(config: FedAvgConfig, identity: dict[str, Any] | None) -> dict[str, Any] | None:
    """The record of the run ``config`` resumes (``None``: a fresh run), after :func:`check_identity`'s check."""
    if config.out is None or not config.resume:
        return None
    check_identity(config.out, identity, resumable_settings(config))
    return saved_record(config.out)


def _candidate_identity(identity: dict[str, Any] | None, candidate: FedAvgConfig) -> dict[str, Any] | None:
    """The identity of a selection candidate's run: the run's, with the candidate's learning rate and penalty."""
    if identity is None:
        return None
    return {**identity, CANDIDATE: {"client_lr": candidate.model.learning_rate,
                                    "penalty": candidate.penalty if candidate.curvature else None}}


def _with(config: FedAvgConfig, name: str, value: float) -> FedAvgConfig:
    """``config`` with its client learning rate (``name`` ``client_lr``) or FedCurv's penalty set to ``value``."""
    if name == "client_lr":
        return dataclasses.replace(config, model=config.model.replace(learning_rate=value))
    return dataclasses.replace(config, penalty=value)


def select_settings(config: FedAvgConfig, split: Split, privacy: LearningPrivacy | None,
                    run: Callable[[FedAvgConfig], dict[str, Any]]
                    ) -> tuple[FedAvgConfig, dict[str, Any], dict[str, Any] | None]:
    """``config`` with its ``auto`` client learning rate, then penalty, chosen on validation; the record and result."""
    auto = [name for name, on in (("client_lr", config.model.learning_rate == AUTO),
                                  ("penalty", config.curvature and config.penalty == AUTO)) if on]
    record: dict[str, Any] = {}
    if not auto:
        return config, record, None
    reason = ("no validation clients" if not split.val else
              "DP: each candidate's rounds would be a further private release" if privacy is not None and privacy.dp
              else None)
    if reason is not None:
        warn(f"{auto[0]} 'auto': {reason}; the stated default is used.")
        for name in auto:
            value = client_lr_choices(config.model)[1] if name == "client_lr" else DEFAULT_PENALTY
            config = _with(config, name, value)
            record[name] = {"value": value, "rule": "default", "reason": reason}
        return config, record, None
    if "penalty" in auto:
        config = _with(config, "penalty", PENALTY_GRID[0])
    score_key, loss_key = ("val_neg_mse", "val_mse") if config.model.real else ("val_f1_macro", "val_log_loss")
    scores: dict[tuple[float, float | None], tuple[float, float, int, int | None]] = {}
    results: dict[tuple[float, float | None], dict[str, Any]] = {}

    def key(candidate: FedAvgConfig) -> tuple[float, float | None]:
        return candidate.model.learning_rate, candidate.penalty if candidate.curvature else None

    def score(candidate: FedAvgConfig) -> tuple[float, float]:
        if key(candidate) not in scores:
            lr, penalty = key(candidate)
            label = f"lr={lr:g}" + ("" if penalty is None else f",penalty={penalty:g}")
            out = None if config.out is None else os.path.join(config.out, "selection", label)
            bar.set_postfix_str(label)
            try:
                result = results[key(candidate)] = run(dataclasses.replace(candidate, out=out))
            except NonFiniteScores as err:
                warn(f"{err}: candidate {label} is left out of the choice")
                scores[key(candidate)] = (math.nan, math.nan, 0, None)
                return scores[key(candidate)][:2]
            finally:
                bar.update()
            kept, rows = int(result["extra"]["kept_round"]), result["extra"]["rounds"]
            kept_row = {**(rows[kept - 1] if rows else {}), **{f"val_{k}": v for k, v in result["val"].items()}}
            scores[key(candidate)] = (*_validation_choice(kept_row), kept, result["extra"].get("diverged_round"))
            if out is not None:
                result["extra"]["rounds_csv"] = os.path.join(out, "rounds.csv")
        return scores[key(candidate)][:2]

    sizes = {"client_lr": len(client_lr_choices(config.model)[0]), "penalty": len(PENALTY_GRID)}
    bar = progress_bar(wanted=config.progress, total=sum(sizes[name] for name in auto) - (len(auto) - 1),
                       desc=f"{config.algorithm} candidates", unit="candidate")
    with bar:
        for name in auto:
            grid = client_lr_choices(config.model)[0] if name == "client_lr" else PENALTY_GRID
            chosen = [score(_with(config, name, value)) for value in grid]
            config = _with(config, name, grid[chosen_index(chosen)])
            record[name] = {"value": grid[chosen_index(chosen)], "rule": "validation", "grid": list(grid),
                            score_key: [f for f, _ in chosen], loss_key: [loss for _, loss in chosen]}
    record["candidates"] = [{"client_lr": lr, **({} if p is None else {"penalty": p}), score_key: f,
                             loss_key: loss, "kept_round": r, "diverged": d}
                            for (lr, p), (f, loss, r, d) in scores.items()]
    if key(config) not in results:
        raise NonFiniteScores(f"{config.algorithm}: every candidate's readout diverged (non-finite outputs); give "
                              "--client-lr below the grid's smallest value.")
    return config, record, results[key(config)]


@dataclasses.dataclass
class _ClientData:
    """What every candidate shares: training data source, evaluation groups, noise table, standardisation and the
    saved model the rounds start from."""

    source: client_data.CachedStates | client_data.RawInputs
    groups: dict[str, _EvalSet | None]
    noise: dict[str, float]
    standardization: Standardization | None
    init: InitModel | None = None
    processes: dict[FedAvgConfig, Any] = dataclasses.field(default_factory=dict)
    """The simulation's learning processes by their settings but the client rate and the penalty (state entries of
    :class:`~tff_esn.federated.simulation.SimulatedProcess`): the candidates share one process and its trace."""


def _client_data(dataset: SequenceDataset, split: Split, config: FedAvgConfig, cache_dir,
                 init: InitModel | None = None) -> _ClientData:
    """The training clients' data source (harvested once) and the evaluation groups, for :func:`select_settings`;
    with ``init`` its state standardisation scales the readout inputs."""
    noisy = set(split.train) if config.noisy_clients is None else set(config.noisy_clients)
    if noisy - set(split.train):
        raise ValueError(f"noisy_clients: {sorted(noisy - set(split.train))} are not training clients {list(split.train)}.")
    noise = {cid: (config.noise_std if cid in noisy else 0.0) for cid in split.train}

    def standardize(states: Sequence[np.ndarray]) -> Standardization:
        if init is not None:
            return init.standardization
        summer = (secure_ridge_sum(config.privacy, [int(np.prod(s.shape[:-1])) for s in states])
                  if config.privacy.secure_aggregation else RidgeStats.sum)
        return federated_standardization(states, summer)

    common = dict(seed=config.seed, noise_std=noise, reservoirs=config.reservoirs, shuffle=config.shuffle)
    if config.states == "cached":
        source = client_data.CachedStates(dataset.select(split.train), config.model, cache_dir=cache_dir,
                                          standardize=standardize, **common)
    else:
        source = client_data.RawInputs(dataset.select(split.train), config.model, **common)
    standardization = source.standardization if config.states == "cached" else None
    model = thesis_model(dataset, config.model, standardization=standardization, seed=config.seed)
    groups = {name: _EvalSet.of(dataset, getattr(split, name), model) for name in ("val", "test")}
    return _ClientData(source, groups, noise, standardization, init)


@dataclasses.dataclass
class _Federation:
    """What a run's rounds need: the clients' data, the learning process and the rounds' communication."""

    data: _ClientData
    process: Any
    backend: str
    cost: Callable[[int], CommunicationCost]
    algorithm: Algorithm
    privacy: LearningPrivacy | None = None
    config: FedAvgConfig | None = None

    def initialize(self):
        """The process's initial state; the simulation's with ``config``'s client rate and penalty."""
        state = self.process.initialize()
        if self.backend != "sim":
            return state
        return self.process.with_settings(state, client_lr=self.config.model.learning_rate,
                                          penalty=self.config.penalty if self.config.curvature else 0.0)

    def client_data(self, sampled: Sequence[str], round_num: int) -> list:
        """The sampled clients' data of a round: in memory for the simulation, TFF datasets for TFF."""
        source = self.data.source
        return (source.in_memory if self.backend == "sim" else source.datasets)(sampled, round_num)


def _federation(dataset: SequenceDataset, config: FedAvgConfig, privacy: LearningPrivacy | None, data: _ClientData, *,
                client_filter: ClientFilter | None, backend: str, own_reservoirs: bool) -> _Federation:
    """The model and the learning process of ``config`` on ``backend``, over the clients' ``data``."""
    cached = config.states == "cached"
    n_inputs = config.model.reservoir.readout_units if cached else len(dataset.feature_names)
    first = data.source.dataset(data.source.ids[0], 0)
    input_spec = (first[0] if own_reservoirs else first).element_spec

    def model_fn():
        return tff.learning.models.from_keras_model(build_thesis_model(n_inputs, config.model, readout_only=cached),
                                                    loss=thesis_loss(config.model), input_spec=input_spec)

    shared = dataclasses.replace(config, model=config.model.replace(learning_rate=AUTO), out=None, resume=False,
                                 **({"penalty": AUTO} if config.curvature else {}))
    process = data.processes.get(shared) if backend == "sim" else None
    if process is None:
        process = build_process(config, model_fn, privacy=privacy, client_filter=client_filter,
                                client_reservoirs=own_reservoirs, runtime=backend)
    if backend == "sim":
        data.processes[shared] = process
    if backend == "tff" and privacy is not None and privacy.secure:
        process = lower_secure_process(process)
    weights = process.get_model_weights(process.initialize())
    algorithm = get_algorithm(config.algorithm)
    cost = functools.partial(algorithm.communication_function, *(sum(int(np.size(w)) for w in part) for part in
                                                                 (weights.trainable, weights.non_trainable)))
    return _Federation(data, process, backend, cost, algorithm, privacy, config)


def _restored(fed: _Federation, config: FedAvgConfig, out: Path | None,
              resume: bool) -> tuple[Any, int, list[dict[str, Any]]]:
    """The state to start from, its round and the earlier rounds' rows: initial (its server model the saved model's
    readout with ``init_from``), or the last checkpoint in ``out``."""
    state = fed.initialize()
    if fed.data.init is not None:
        weights = fed.process.get_model_weights(state)
        state = fed.process.set_model_weights(state, tff.learning.models.ModelWeights(
            trainable=fed.data.init.trainable, non_trainable=list(weights.non_trainable)))
    found = None if out is None else RoundCheckpoint(out).latest(state)
    if found is not None and not resume:
        raise ValueError(f"run_federated: {out} holds checkpoints of an earlier run; pass resume=True "
                         "(--resume) to continue it, or choose a new output folder.")
    if found is None:
        return state, 0, []
    state, start_round, rows = found
    if start_round > config.rounds:
        raise ValueError(f"run_federated: {out} holds a run of {start_round} rounds; resuming it with "
                         f"rounds={config.rounds} would report its round-{start_round} model as "
                         f"{config.rounds} rounds: give rounds ≥ {start_round}, or a new output folder.")
    return state, start_round, rows


def _round_row(fed: _Federation, output, sampled: list[str], round_num: int,
               seconds: float, k_classes: int) -> dict[str, Any]:
    """One round's measurements: clients, training loss, communicated floats, time and per-group metrics."""
    kernel, bias = (np.asarray(w) for w in fed.process.get_model_weights(output.state).trainable)
    work = output.metrics["client_work"]
    per_round = fed.cost(1)
    row = {"round": round_num + 1, "clients": int(work.get("clients", len(sampled))),
           "accepted_clients": int(work.get("accepted_clients", len(sampled))),
           "clean_clients": sum(fed.data.noise[cid] == 0 for cid in sampled),
           "train_loss": float(work["train"].get("loss", math.nan)),  # DP clients send no metrics
           "up_floats_per_client": per_round.up_floats, "down_floats_per_client": per_round.down_floats,
           "seconds": seconds}
    for name in ("val", "test"):
        if (group := fed.data.groups[name]) is not None:
            row.update({f"{name}_{k}": v for k, v in group.row(kernel, bias, k_classes).items()})
    return row


def _train(fed: _Federation, config: FedAvgConfig, state, start_round: int, *, out: Path | None,
           best: _BestRound | None, k_classes: int, ledger: dict[str, Any],
           earlier: list[dict[str, Any]] = ()) -> tuple[Any, list[dict[str, Any]]]:
    """Rounds ``start_round`` … ``config.rounds − 1`` until the ``patience`` stop; the last state and every row.
    Each round's DP event joins ``ledger["events"]``, checkpointed with the round."""
    rows, curvature_clipped = list(earlier), 0
    if best is not None and config.patience and start_round - best.round >= config.patience:
        return state, rows  # a resumed run that had already stopped early
    privacy = fed.privacy or LearningPrivacy()
    scheme = privacy.sampling(config.clients_per_round, len(fed.data.source.ids))
    checkpoint, log = (None, None) if out is None else (RoundCheckpoint(out),
                                                        RoundLog(out, start_round, timed=scheme.published))
    bar = progress_bar(range(start_round, config.rounds), wanted=config.progress, initial=start_round,
                       total=config.rounds, desc=f"{config.algorithm} rounds ({fed.backend})", unit="round",
                       leave=False)
    try:
        for round_num in bar:
            began = time.perf_counter()
            sampled = (poisson_clients(fed.data.source.ids, scheme.rate, privacy.seed, round_num) if scheme.scheme == POISSON
                       else sample_clients(fed.data.source.ids, config.clients_per_round, config.seed, round_num))
            output = fed.process.next(state, fed.client_data(sampled, round_num))
            state = output.state
            try:
                row = _round_row(fed, output, sampled, round_num, time.perf_counter() - began, k_classes)
            except NonFiniteScores:
                raise NonFiniteScores(f"{config.algorithm}: round {round_num + 1}: the readout diverged (non-finite "
                                      f"outputs) at client lr {config.model.learning_rate:g}; give a smaller "
                                      "--client-lr (or auto)") from None
            if privacy.dp:
                ledger["events"].append(privacy.round_event(config.clients_per_round, len(fed.data.source.ids)))
            curvature_clipped += secure_clipped(output.metrics["client_work"].get("curvature"))
            if best is not None:
                kernel, bias = (np.asarray(w) for w in fed.process.get_model_weights(state).trainable)
                best.offer(*_validation_choice(row), round_num + 1, kernel, bias)
            row = published_row(row, dp=privacy.dp, selection_published=scheme.published)
            rows.append(published_row({**row, "sampled": sampled}, dp=privacy.dp,
                                      selection_published=scheme.published))
            bar.set_postfix(val_f1=row.get("val_f1_macro", math.nan), accepted=row.get("accepted_clients"))
            if out is not None:
                log.append(row, round_num + 1)
                checkpoint.save(state, round_num + 1, rows,
                                {**ledger, "events": [e.to_dict() for e in ledger["events"]]})
            if best is not None and config.patience and round_num + 1 - best.round >= config.patience:
                break
    finally:
        bar.close()
        if log is not None:
            log.close()
    if curvature_clipped:
        warn(f"secure aggregation clipped {curvature_clipped} values of FedCurv's u, v to the secure sum's adaptive "
             "range (it grows from 50 over the rounds): u, v were smaller than the plain sums in those rounds")
    return state, rows


def _ledger(config: FedAvgConfig, identity: dict[str, Any] | None, saved: dict[str, Any] | None,
            privacy: LearningPrivacy | None, clients: int, start_round: int) -> dict[str, Any]:
    """What the checkpoint records beside the state: identity, resumable settings, what z was calibrated for, the
    rounds' DP events and the resumes (each with the declared settings it changed)."""
    dp = privacy is not None and privacy.dp
    calibration = (saved or {}).get("calibration")
    if calibration is None and dp:
        calibration = {"noise_multiplier": privacy.noise_multiplier, "epsilon": config.privacy.dp_epsilon,
                       "rounds": config.rounds, "sampling_rate": privacy.round_event(config.clients_per_round,
                                                                                     clients).sampling_rate}
    resumes = list((saved or {}).get("resumes", []))
    if saved is not None:
        resumes.append({"round": start_round, "changed": resume_changes(config.out, saved, identity,
                                                                         resumable_settings(config))})
    return {"identity": identity, "resumable": resumable_settings(config), "calibration": calibration,
            "events": [RoundEvent(**e) for e in (saved or {}).get("events", [])], "resumes": resumes}


def _privacy_sections(privacy: LearningPrivacy | None, config: FedAvgConfig, clients: int, ledger: dict[str, Any],
                      **declared: Any) -> dict[str, Any]:
    """The run's ``privacy``/``secure_aggregation`` sections: ε composed from the rounds' checkpointed events."""
    privacy = privacy or LearningPrivacy()
    if not privacy.dp:
        return privacy.sections(config.rounds, config.clients_per_round, clients, **declared)
    events, calibration = ledger["events"], ledger["calibration"]
    if calibration["epsilon"] is not None and len(events) > calibration["rounds"]:
        warn(f"DP: the noise (z = {calibration['noise_multiplier']:.4g}) was calibrated for ε = "
             f"{calibration['epsilon']:g} over {calibration['rounds']} rounds; the run has {len(events)} rounds "
             "(resumed with more), so its ε is recomputed from the rounds' events and exceeds that target")
    return privacy.sections(len(events), config.clients_per_round, clients, events=events, calibrated=calibration,
                            **declared)


def _run(dataset: SequenceDataset, split: Split, config: FedAvgConfig, privacy: LearningPrivacy | None, *,
         client_filter: ClientFilter | None, data: _ClientData, backend: str,
         identity: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`run_federated` of one setting over the clients' ``data`` (its checkpoints record ``identity``)."""
    saved = _resumed_record(config, identity)
    own_reservoirs = config.states == "faithful" and config.reservoirs == "different"
    fed = _federation(dataset, config, privacy, data, client_filter=client_filter, backend=backend,
                      own_reservoirs=own_reservoirs)
    out = None if config.out is None else Path(config.out)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    state, start_round, earlier = _restored(fed, config, out, config.resume)
    ledger = _ledger(config, identity, saved, privacy, len(split.train), start_round)
    best = None
    if (config.keep_best or config.patience) and fed.data.groups["val"] is None:
        warn(f"{'keep_best' if config.keep_best else 'patience'}: no validation clients to choose a round on; the "
             "result is the last round's model.")
    elif config.keep_best or config.patience:
        best = _BestRound(out, resumed=start_round > 0)
    state, rows = _train(fed, config, state, start_round, out=out, best=best, k_classes=dataset.n_classes,
                         ledger=ledger, earlier=earlier)
    kernel, bias = (np.asarray(w) for w in fed.process.get_model_weights(state).trainable)
    kept = len(rows)
    if best is not None and best.round and config.keep_best:
        kept, kernel, bias = best.round, best.kernel, best.bias
    model = thesis_model(dataset, config.model, kernel, bias, data.standardization, seed=config.seed)
    report = group_reports(model, dataset, {name: getattr(split, name) for name in ("train", "val", "test")})
    for name, section in report.items():
        if section is not None and dataset.task.real and math.isnan(section["rmse"]):
            warn(f"{config.algorithm}: {name}: the readout diverged (non-finite outputs) at client lr "
                 f"{config.model.learning_rate:g}: give a smaller --client-lr (or auto)")
    return {
        **report,
        "communication": fed.cost(len(rows)).to_dict(),
        "model": model,
        "extra": {"rounds": rows, "weights": {"kernel": kernel, "bias": bias}, "rounds_run": len(rows),
                  "standardization": None if data.standardization is None else data.standardization.to_dict(),
                  "backend": backend, "class_weight": list(config.model.class_weight), "kept_round": kept,
                  "clients_per_round": config.clients_per_round,
                  "diverged_round": diverged_round(rows, filtered=client_filter is not None),
                  "accepted_clients": [r["accepted_clients"] for r in rows if "accepted_clients" in r],
                  "resumes": ledger["resumes"]},
        **_privacy_sections(privacy, config, len(split.train), ledger, support=fed.algorithm.privacy,
                            curvature=config.curvature, own_client_work=client_filter is not None or own_reservoirs),
    }
