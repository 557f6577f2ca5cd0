"""Running a named search end to end: data, tuner, progress, resume, best-hparams JSON, summary.

:func:`tune` loads the space's data (:func:`tff_esn.data.sources.load_source` and
:func:`tff_esn.data.splits.get_split`), builds the tuner for the space's kind — KerasTuner's
``Tuner`` over :class:`tuning.thesis.ThesisHyperModel` for ``thesis`` (thesis §6.1), or
:class:`tuning.closed_form.ClosedFormTuner` for the ridge spaces — with an
:class:`tuning.oracle.ExhaustiveRandomSearchOracle`, and searches until the trial budget is
spent or the space is exhausted.

Output folder ``OUT``:

* ``OUT/kerastuner/`` — KerasTuner's own project (oracle state and one folder per trial).
  Running again with the same ``OUT`` resumes: finished trials are kept, an interrupted one is
  run again, and ``trials`` is the total budget (raise it to extend a finished search).
* ``OUT/search.json`` — what was searched (space, data, seed, state options); resuming with
  different values is refused, naming the field.
* ``OUT/best_hparams.json`` — the flat hyperparameters of the best trial as ``tff-esn run``
  flags (:mod:`tuning.hparams`), for ``tff-esn run ALGORITHM --hparams OUT/best_hparams.json``.
* ``OUT/best_trial.json`` — the best trial: id, objective, score and its values as in
  ``trials.csv`` (including the thesis' data options ``window`` and ``features``).
* ``OUT/trials.csv`` — every trial: id, status, objective, seconds, hyperparameters.

On a researcher's own data (``npz:``/``ts:``) a closed-form search starts from the own-data
defaults (:data:`tff_esn.closed_form.configs.OWN_DATA`: a reservoir bias), validates on the
split's validation clients or — without them — on the seeded hold-out a run's gradient-trained
models validate on (:meth:`tff_esn.data.carving.Carving.holdout`), and maximises the validation
balanced accuracy, which a constant predictor cannot win (1/K). A trial whose readout predicts one
class is never recommended, and the own-data default configuration (λ chosen on the same
validation data) is scored too: when no trial beats it, the default is what ``best_hparams.json``
recommends.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras_tuner as kt
import numpy as np

from tff_esn.closed_form.configs import OWN_DATA
from tff_esn.closed_form.selection import DEFAULT_STATE_MODE, L2_GRID
from tff_esn.data.source_names import own_data
from tff_esn.esn.weights import StateSpec
from tff_esn.common.io import write_csv_atomic, write_json_atomic
from tff_esn.common.progress import progress_bar
from tuning.closed_form import ClosedFormTuner
from tuning.hparams import run_hparams, write_hparams
from tuning.oracle import ExhaustiveRandomSearchOracle
from tuning.spaces import SearchSpace, get_space, space_size
from tuning.thesis import ThesisHyperModel

PROJECT = "kerastuner"
ROW_KEYS = ("trial", "status", "score", "seconds", "classes_predicted")
"""A trial row's keys that are no hyperparameter."""
OWN_DATA_OBJECTIVE = "val_balanced_accuracy"
"""What a search on own data maximises: a constant predictor scores 1/K."""
THESIS_RUN_FLAGS = {"learning_rate": "client_lr"}
THESIS_DATA_KEYS = ("window", "features")


class SearchError(ValueError):
    """A search that cannot run as asked, or whose trials give nothing to recommend (one line naming the fix)."""


class ProgressMixin:
    """A tqdm bar over the trial budget, and each trial's wall time as its ``seconds`` metric."""

    progress = True

    def on_search_begin(self):
        super().on_search_begin()
        done = sum(t.status == "COMPLETED" for t in self.oracle.trials.values())
        total = self.oracle.max_trials or space_size(self.oracle.hyperparameters)
        self._bar = progress_bar(wanted=self.progress, total=total, initial=done, unit="trial", desc="search")

    def on_trial_begin(self, trial):
        super().on_trial_begin(trial)
        self._trial_start = time.perf_counter()

    def on_trial_end(self, trial):
        if not trial.metrics.exists("seconds"):
            trial.metrics.register("seconds", direction="min")
        trial.metrics.update("seconds", time.perf_counter() - self._trial_start)
        super().on_trial_end(trial)
        best = self.oracle.get_best_trials(1)
        self._bar.update(1)
        if best:
            self._bar.set_postfix({self.oracle.objective.name: f"{best[0].score:.4f}"})

    def search(self, *args, **kwargs):
        """KerasTuner's search; the bar is closed even when a trial is interrupted."""
        try:
            return super().search(*args, **kwargs)
        finally:
            if getattr(self, "_bar", None) is not None:
                self._bar.close()


class ThesisTuner(ProgressMixin, kt.Tuner):
    """KerasTuner's Keras ``Tuner`` with progress, for :class:`ThesisHyperModel`; a loaded
    model (``get_best_models``) is the whole thesis model on the inputs."""

    def _try_build(self, hp):
        """KerasTuner's build, without its per-trial ``clear_session()`` and ``gc.collect()`` when
        the hypermodel reuses its readout models, which leave no graph to free."""
        if self.hypermodel.cached_states:
            return self._build_hypermodel(hp)
        return super()._try_build(hp)

    def load_model(self, trial):
        model = super().load_model(trial)
        if self.hypermodel.cached_states:
            return self.hypermodel.full_model(trial.hyperparameters, model)
        return model


class ClosedFormSearchTuner(ProgressMixin, ClosedFormTuner):
    """:class:`ClosedFormTuner` with progress."""


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """Outcome of :func:`tune`: best hyperparameters and score, every trial, output paths."""

    best_hparams: dict[str, Any]
    best_score: float
    trials: list[dict[str, Any]]
    out: Path
    objective: str
    default_score: float | None = None
    recommends_default: bool = False

    def summary(self, top: int = 5) -> str:
        """Markdown table of the ``top`` best trials."""
        rows = [r for r in self.trials if r["score"] is not None][:top]
        if not rows:
            return "no completed trial"
        keys = [k for k in rows[0] if k not in ROW_KEYS]
        head = ["rank", "trial", self.objective, "seconds", *keys]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for rank, r in enumerate(rows, 1):
            cells = [rank, r["trial"], r["score"], r["seconds"], *(r[k] for k in keys)]
            lines.append("| " + " | ".join(_fmt(c) for c in cells) + " |")
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _dataset_kind(source: str) -> str:
    kind = source.split(":", 1)[0]
    return kind[len("synthetic-"):] if kind.startswith("synthetic-") else kind


def data_names(space: SearchSpace, source: str) -> tuple[str, str]:
    """``(pipeline, split)`` of ``space`` on ``source`` (own data, npz and ts files: the files' own ``npz`` split)."""
    kind = _dataset_kind(source)
    pipeline = space.pipeline.format(dataset=kind)
    return pipeline, "npz" if own_data(source) else space.split.format(dataset=kind)


def default_spec(source: str) -> StateSpec:
    """The states a search's ridge readouts see by default: ``tff-esn run``'s on ``source`` (own
    data: the mean state, :data:`~tff_esn.closed_form.selection.DEFAULT_STATE_MODE`; a run's
    ``--state-mode auto`` is chosen by cross-validation, which a search does not repeat per trial)."""
    if own_data(source):
        return StateSpec(state_mode=DEFAULT_STATE_MODE)
    return StateSpec()


def objective(space: SearchSpace, source: str) -> str:
    """The validation metric a search maximises: the space's, balanced accuracy on own data."""
    return OWN_DATA_OBJECTIVE if own_data(source) else space.objective


def _own_split(dataset, split, seed: int):
    """Own data: the split's validation clients, else the seeded hold-out of its training clients."""
    from tff_esn.data.carving import carve

    return carve(dataset, split, seed=seed).holdout()


def _check_record(out: Path, record: dict[str, Any], overwrite: bool) -> None:
    """Writes ``search.json``, refusing to resume a search made with other settings."""
    path = out / "search.json"
    if path.exists() and not overwrite:
        previous = json.loads(path.read_text())
        changed = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
        if changed:
            diffs = ", ".join(f"{k}: {previous.get(k)!r} → {record.get(k)!r}" for k in changed)
            raise SearchError(f"{out} holds a search with other settings ({diffs}); use another --out or --overwrite.")
    write_json_atomic(path, record)


def _thesis_data(source: str, split_name: str, cache_dir, seed: int):
    """Cached ``window → (train, val, feature names)`` of the thesis pipeline."""
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    @functools.lru_cache(maxsize=None)
    def data(window: int):
        dataset = load_source(source, "thesis", cache_dir=cache_dir, hrv_window_s=window // 64)
        split = get_split(split_name, dataset, seed=seed)
        return dataset.pooled(split.train), dataset.pooled(split.val), dataset.feature_names

    return data


def _check_validation_classes(space: SearchSpace, dataset, split) -> None:
    """A :class:`SearchError` when the validation clients hold one class: every trial's readout would predict one
    class there, and none could be recommended."""
    if dataset.task.real:
        return
    labels = dataset.pooled(split.val).y
    classes = np.unique(labels)
    if len(classes) < 2:
        raise SearchError(f"tune {space.name}: the validation clients ({len(labels)} sequence(s)) hold one class "
                          f"({dataset.label_names[int(classes[0])]!r}), so no trial can be ranked by a readout that "
                          "tells classes apart; give validation clients holding two or more classes (or no 'val' "
                          "group: the search then holds out training sequences of every class).")


def build_tuner(space: SearchSpace, *, source: str, trials: int | None, out: Path, seed: int, overwrite: bool,
                spec: StateSpec, cache_dir=None, progress: bool = True):
    """The tuner of ``space`` over ``source`` with its oracle, project in ``out/kerastuner``."""
    pipeline, split_name = data_names(space, source)
    own = own_data(source)
    if own and space.kind == "gradient":
        raise SearchError(f"tune {space.name}: the thesis space searches the thesis pipeline's windows and feature "
                         f"subsets of WESAD, which {source} does not have; on npz:/ts: data search a closed-form "
                         "space (incfed-wesad, pfedrr, fedip-wesad, …) — `tff-esn run fedavg|fedcurv|thesis-central` "
                         "choose their learning rate on validation data themselves.")
    hp = space.build()
    if own:
        hp.Fixed("bias_scaling", OWN_DATA["bias_scaling"])
    oracle = ExhaustiveRandomSearchOracle(
        objective=kt.Objective(objective(space, source), "max"), max_trials=trials, seed=seed,
        hyperparameters=hp, tune_new_entries=False, allow_new_entries=False,
    )
    common = dict(directory=str(out), project_name=PROJECT, overwrite=overwrite)
    if space.kind == "gradient":
        tuner = ThesisTuner(oracle=oracle, hypermodel=ThesisHyperModel(_thesis_data(source, split_name, cache_dir, seed),
                                                                        seed=seed), **common)
    else:
        from tff_esn.data.sources import load_source
        from tff_esn.data.splits import get_split

        dataset = load_source(source, pipeline, cache_dir=cache_dir)
        split = get_split(split_name, dataset, seed=seed)
        if own:
            dataset, split = _own_split(dataset, split, seed)
        _check_validation_classes(space, dataset, split)
        tuner = ClosedFormSearchTuner(oracle, dataset, split, spec=spec, seed=seed, **common)
    tuner.oracle.max_trials = trials
    tuner.progress = progress
    return tuner


def trial_rows(tuner, space: SearchSpace, seed: int, n_inputs: int | None) -> list[dict[str, Any]]:
    """Every trial as a flat row, best first (trials without a score last)."""
    rows = []
    for trial in tuner.oracle.trials.values():
        values = dict(trial.hyperparameters.values)
        if space.kind == "closed-form":
            values = run_hparams(values, n_inputs=n_inputs, seed=seed)
        seconds = trial.metrics.get_last_value("seconds") if trial.metrics.exists("seconds") else None
        classes = ({"classes_predicted": int(trial.metrics.get_last_value("val_classes_predicted"))}
                   if trial.metrics.exists("val_classes_predicted") else {})
        rows.append({"trial": trial.trial_id, "status": trial.status, "score": trial.score,
                     "seconds": seconds, **classes, **values})
    return sorted(rows, key=lambda r: (r["score"] is None, -(r["score"] or 0.0), r["trial"]))


def _run_flags(space: SearchSpace, source: str, values: dict[str, Any], seed: int, spec: StateSpec,
               tuner) -> dict[str, Any]:
    """Best values as ``tff-esn run`` flags (argparse destinations), with the searched pipeline and split.

    Closed-form spaces add the state options (and FedIP's ``rounds``); the thesis space maps
    Adam's ``learning_rate`` to ``client_lr`` and leaves out the data options ``window`` and
    ``features``, which ``tff-esn run`` does not take (they stay in ``best_trial.json``).
    """
    pipeline, split = data_names(space, source)
    if space.kind == "gradient":
        flags = {THESIS_RUN_FLAGS.get(k, k): v for k, v in values.items() if k not in THESIS_DATA_KEYS}
        return {**flags, "seed": seed, "pipeline": pipeline, "split": split}
    data = {} if own_data(source) else {"pipeline": pipeline, "split": split}
    flags = {**values, **dataclasses.asdict(spec), **data}
    if any(k.startswith("ip_") for k in values):
        flags["rounds"] = tuner.ip_rounds
    return flags


def default_trial(tuner: ClosedFormTuner, objective_name: str, seed: int,
                  keys: Sequence[str]) -> tuple[dict[str, Any], float]:
    """The own-data default configuration (:data:`tff_esn.closed_form.configs.OWN_DATA`'s reservoir, λ of
    :data:`~tff_esn.closed_form.selection.L2_GRID` chosen on the validation data, a tie to the
    larger λ as ``--l2 auto``) and its score, scored as a trial is; ``-inf`` when it predicts one class.
    Its values are those of the settings ``keys`` a trial records (the others are ``tff-esn run``'s defaults)."""
    from tff_esn.closed_form.configs import ReadoutConfig

    reservoir = dataclasses.replace(ReadoutConfig().reservoir, seed=seed,
                                    bias_scaling=OWN_DATA["bias_scaling"]).to_dict()
    best: tuple[dict[str, Any], float] = ({**reservoir, "l2": L2_GRID[-1]}, -math.inf)
    for l2 in L2_GRID:
        metrics = tuner.score({**reservoir, "l2": l2})
        score = metrics[objective_name] if metrics["val_classes_predicted"] > 1 else -math.inf
        if score >= best[1]:
            best = ({**reservoir, "l2": l2}, score)
    return {k: best[0][k] for k in keys if k in best[0]}, best[1]


def tune(space_name: str, *, data: str | None = None, trials: int | None = None, out: str | Path,
         seed: int = 0, overwrite: bool = False, spec: StateSpec | None = None, cache_dir=None,
         progress: bool = True) -> TuneResult:
    """Runs (or resumes) the search ``space_name`` and writes the outputs listed in the module docstring.

    Args:
        space_name: a key of :data:`tuning.spaces.SPACES`.
        data: data source (default: the space's synthetic source).
        trials: total trial budget (default: the space's published budget; ``None`` for
            ``thesis`` means until the space is exhausted).
        out: output folder; an existing search there is resumed unless ``overwrite``.
        seed: seed of the oracle, the reservoir and every random choice.
        spec: states entering ridge readouts (closed-form spaces; ``None``: :func:`default_spec`).
    """
    space = get_space(space_name)
    source = data or space.source
    spec = default_spec(source) if spec is None else spec
    trials = space.trials if trials is None else trials
    if trials is not None and (not isinstance(trials, int) or trials < 1):
        raise SearchError(f"trials: expected an integer ≥ 1, got {trials!r}.")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"space": space.name, "data": source, "seed": seed, **dataclasses.asdict(spec)}
    _check_record(out, record, overwrite)
    tuner = build_tuner(space, source=source, trials=trials, out=out, seed=seed, overwrite=overwrite, spec=spec,
                        cache_dir=cache_dir, progress=progress)
    tuner.search(verbose=0)
    n_inputs = len(tuner.dataset.feature_names) if space.kind == "closed-form" else None
    rows = trial_rows(tuner, space, seed, n_inputs)
    write_csv_atomic(out / "trials.csv", rows, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
    best = [r for r in rows if r["score"] is not None and r.get("classes_predicted") != 1]
    if not best and any(r.get("classes_predicted") == 1 for r in rows):
        raise SearchError(f"search {space.name!r}: every completed trial predicts one class on the validation data "
                          f"(trials in {out / 'trials.csv'}); none is recommended — widen the space or give the "
                          "validation data more sequences.")
    if not best:
        raise SearchError(f"search {space.name!r}: no trial completed; see the trial messages in {out / PROJECT}.")
    name = objective(space, source)
    values = {k: v for k, v in best[0].items() if k not in ROW_KEYS}
    score = best[0]["score"]
    record: dict[str, Any] = {"trial": best[0]["trial"], "objective": name, "score": score, "values": values}
    default_score, recommends_default = None, False
    if own_data(source):
        default_values, default_score = default_trial(tuner, name, seed, list(values))
        record["default"] = {"score": default_score, "values": default_values}
        if default_score > score:
            values, score, recommends_default = default_values, default_score, True
            record.update(trial=None, score=score, values=values, recommended="own-data default")
    write_json_atomic(out / "best_trial.json", record)
    best_hparams = _run_flags(space, source, values, seed, spec, tuner)
    write_hparams(out / "best_hparams.json", best_hparams)
    return TuneResult(best_hparams, float(score) if math.isfinite(score) else score, rows, out, name,
                      default_score, recommends_default)
