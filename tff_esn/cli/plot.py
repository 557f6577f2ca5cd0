"""``tff-esn plot KIND... (--run DIR | --model DIR) [--data SOURCE]``: pictures of a finished run or a saved model,
drawn by :mod:`tff_esn.runs.plots`.

Kinds: ``reservoir`` (Ŵ's adjacency and degree distribution) and ``spectrum`` (Ŵ's eigenvalues and the
spectral-radius circle) need the model only (``DIR/model`` of a run, or ``--model``); ``states`` (x(t) of a few
units, the model's reservoir driven by the first sequence shown) and ``forecast`` (a real-valued model against the
truth) need data too: the run's (its test clients), or ``--data SOURCE`` (read as the run read its data, every client
pooled where SOURCE does not hold the run's groups); ``learning-curve`` (per-round metrics of ``rounds.csv``) and
``confusion`` (the test confusion matrix of ``metrics.json``) need a run folder. Each is written to ``--out``
(default: the run's ``DIR/figures``, a model folder's sibling ``figures``) as PDF, SVG and PNG with a caption.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

from tff_esn.cli import UsageError

KINDS = ("reservoir", "spectrum", "states", "forecast", "learning-curve", "confusion")
RUN_KINDS = {"learning-curve": "rounds.csv", "confusion": "metrics.json"}
"""The kinds drawn from a run folder's records, and the record each reads."""
DATA_KINDS = ("states", "forecast")
"""The kinds that drive the model with data."""


@dataclasses.dataclass(frozen=True)
class Subject:
    """What a figure is drawn from: a run folder (``run``, its ``metrics.json`` ``record``) or a saved model folder
    (``model_dir``) alone, and the data ``source`` (``None``: the run's, or none for a model alone)."""

    model_dir: Path
    run: Path | None = None
    record: dict[str, Any] | None = None
    source: str | None = None

    @property
    def flag(self) -> str:
        """The command-line flag naming what is drawn: ``--run DIR`` or ``--model DIR``."""
        return f"--run {self.run}" if self.run is not None else f"--model {self.model_dir}"

    @property
    def data(self) -> str | None:
        """The data source the model is driven with (``None``: none given)."""
        return self.source or (self.record or {}).get("data")


def subject_of(run: str | None = None, model: str | None = None, data: str | None = None) -> Subject:
    """The :class:`Subject` of the flags: a run folder (its ``metrics.json`` read) or a model folder."""
    if run is not None:
        folder = Path(run)
        path = folder / "metrics.json"
        if not path.is_file():
            raise UsageError(f"--run {folder}: no metrics.json; give the folder of a finished run (tff-esn run --out).")
        return Subject(folder / "model", folder, json.loads(path.read_text()), data)
    return Subject(Path(model), source=data)


def _model(subject: Subject):
    """The subject's saved :class:`~tff_esn.esn.model.Model`."""
    from tff_esn.esn.model import Model, ModelFormatError

    try:
        return Model.load(subject.model_dir)
    except ModelFormatError as err:
        raise UsageError(f"{subject.flag}: {err}") from None


def _dataset(subject: Subject, model):
    """The data as the run (or, for a model alone, its provenance) read it, checked against the model, and its groups:
    the run's where the data holds them, else every client as one group ``all``."""
    from tff_esn.cli.predict import load_for
    from tff_esn.data.errors import DataError
    from tff_esn.runs.predictions import ALL, check_dataset, run_groups

    record = subject.record if subject.record is not None else dict(model.provenance)
    try:
        dataset, groups, _ = run_groups(record, check_dataset(model, load_for(record, model, subject.data)))
    except DataError as err:
        raise UsageError(f"plot: {err}") from None
    return dataset, groups or {ALL: dataset.client_ids}


def _states(model, x):
    """(steps, units) states of one (steps, features) sequence through the model's (first) reservoir."""
    import numpy as np

    from tff_esn.esn.states_numpy import states

    weights = model.members[0].reservoir
    x = np.asarray(x, np.float32)[None]
    x = model.inputs.apply(x) if model.inputs is not None else x
    return np.stack([s[0].copy() for s in states(x, weights.kernel, weights.recurrent, weights.bias, weights.gain,
                                                  weights.leaky, None, weights.layers, weights.activation)])


def _missing(kind: str, subject: Subject) -> str | None:
    """Why ``kind`` cannot be drawn from ``subject`` (``None``: it can)."""
    if kind in RUN_KINDS and subject.record is None:
        return (f"{kind} needs a run folder's {RUN_KINDS[kind]}; give --run DIR ({subject.flag} is a model "
                "folder alone)")
    if kind in DATA_KINDS and subject.data is None:
        return f"{kind} needs data; give --data SOURCE with {subject.flag}"
    return None


def _drawn_from_records(kind: str, subject: Subject, name: str):
    """The learning curve or the confusion matrix of a run folder, and its caption."""
    import numpy as np

    from tff_esn.runs import plots

    folder, record = subject.run, subject.record
    if kind == "confusion":
        group = "test" if record.get("test") else "val"
        matrix = (record.get(group) or {}).get("confusion")
        if matrix is None:
            raise UsageError(f"plot confusion: {folder}/metrics.json has no {group} confusion matrix (a real-valued "
                             "run, or a run written before confusion matrices were recorded).")
        labels = (record.get("partition") or {}).get("label_names") or [str(k) for k in range(len(matrix))]
        return (plots.plot_confusion(np.asarray(matrix), labels, f"{name}: {group} confusion"),
                f"Counts of {group} true class (rows, with recall) against predicted class of the run.")
    path = folder / "rounds.csv"
    if not path.is_file():
        raise UsageError(f"plot learning-curve: {folder} has no rounds.csv; a learning curve needs a run of "
                         "rounds (fedavg, fedcurv).")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    majority = (((record.get("baselines") or {}).get("majority") or {}).get("val") or {}).get("accuracy")
    return (plots.plot_learning_curve(rows, f"{name}: per round", reference=None if majority is None else
                                      ("val accuracy of the majority class", majority)),
            f"Validation and test scores after each round of the run ({len(rows)} rounds, rounds.csv).")


def _training_mean(model, dataset, groups) -> tuple[float | None, str]:
    """The forecast's reference line: the mean target of the training group, else the model's target
    standardisation mean (the training mean it was fitted with), else none; and how the caption says it."""
    import numpy as np

    if "train" in groups:
        train = dataset.pooled(groups["train"])
        return float(np.mean(model.labels(train.y, len(train)))), "the line is the training mean"
    if model.outputs is not None:
        return float(model.outputs.mean[0]), "the line is the training mean of the model's target standardisation"
    return None, "no training mean is known (no training group, no target standardisation)"


def draw(kind: str, subject: Subject, units: int):
    """The figure of ``kind`` for ``subject`` and its caption; a one-line :class:`UsageError` naming what is missing
    (a run folder, data) when ``kind`` cannot be drawn from it."""
    import numpy as np

    from tff_esn.runs import plots
    from tff_esn.runs.figures import dataset_title

    missing = _missing(kind, subject)
    if missing is not None:
        raise UsageError(f"plot {missing}.")
    model = None if kind in RUN_KINDS else _model(subject)
    about = subject.record if subject.record is not None else dict(model.provenance)
    trained = about.get("data")
    name = f"{about.get('algorithm', 'model')}" + (f" on {dataset_title(trained)}" if trained else "")
    if kind in RUN_KINDS:
        return _drawn_from_records(kind, subject, name)
    member = model.members[0]
    weights, config = member.reservoir, member.config
    topology = f"{config.topology} " if config is not None else ""
    what = f"{topology}reservoir of {weights.units} units" + (f" (seed {config.seed})" if config is not None else "")
    if kind == "reservoir":
        return (plots.plot_reservoir(weights.recurrent, f"{name}: {what}"),
                f"Non-zero pattern and degree distribution of Ŵ of the model's {what}.")
    if kind == "spectrum":
        radius = config.spectral_radius if config is not None else None
        return (plots.plot_spectrum(weights.recurrent, radius, f"{name}: {what}"),
                f"Eigenvalues of Ŵ of the model's {what}, the circle of its spectral radius and the unit circle.")
    if kind == "forecast" and not model.task.real:
        raise UsageError(f"plot forecast: {subject.flag} holds a classification model; forecast needs one of "
                         "--task forecast or regress.")
    dataset, groups = _dataset(subject, model)
    shown = next((g for g in ("test", "val", "train") if groups.get(g)), next(iter(groups)))
    sequences = dataset.pooled(groups[shown])
    where = f"{shown} sequence of {dataset_title(subject.data)}"
    if kind == "states":
        x = sequences.x[0, :int(sequences.steps[0])]
        chosen = list(range(min(units, weights.units)))
        return (plots.plot_states(_states(model, x), f"{name}: reservoir states", chosen),
                f"States x_i(t) of units {chosen} of the model's reservoir driven by the first {where} "
                f"({len(x)} steps).")
    prediction = model.predict(sequences.x, sequences.lengths)
    truth = model.labels(sequences.y, len(sequences)).reshape(prediction.shape)
    per_step = prediction.ndim == 2
    if per_step:  # one sequence, step by step
        truth, prediction = truth[0, :int(sequences.steps[0]) - model.spec.washout], prediction[0, :len(truth[0])]
    mean, said = _training_mean(model, dataset, groups)
    how = f"first {where}, step by step" if per_step else f"{where}s, one prediction each"
    return (plots.plot_forecast(truth, prediction, f"{name}: forecast", reference=mean),
            f"The saved model against the truth on the {how}; {said}.")


def _plot(args: argparse.Namespace) -> int:
    from tff_esn.runs.figures import save_figure

    drawn_from = subject_of(args.run, args.model, args.data)
    out = Path(args.out) if args.out else (drawn_from.run or drawn_from.model_dir.parent) / "figures"
    kinds = KINDS if "all" in args.kinds else tuple(dict.fromkeys(args.kinds))
    for kind in kinds:
        try:
            figure, caption = draw(kind, drawn_from, args.units)
        except UsageError as err:
            if "all" not in args.kinds:
                raise
            print(f"{kind}: skipped ({str(err).removeprefix(f'plot {kind}').lstrip(': ').rstrip('.')})")
            continue
        paths = save_figure(figure, out / kind, caption)
        print(f"{kind} → {paths['pdf']}, {paths['svg'].name}, {paths['png'].name}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plot", help="draw a run's or a model's reservoir, spectrum, states, forecast, learning curve or confusion",
        description="Draw pictures of a finished run folder or a saved model as PDF, SVG and 300-dpi PNG with a "
                    "caption file. reservoir and spectrum need the model only; states and forecast need data (the "
                    "run's, or --data); learning-curve and confusion need a run folder.")
    parser.add_argument("kinds", nargs="+", choices=(*KINDS, "all"), metavar="KIND",
                        help=f"what to draw: {', '.join(KINDS)} or all (each that applies)")
    drawn = parser.add_mutually_exclusive_group(required=True)
    drawn.add_argument("--run", default=None, metavar="DIR", help="a run folder (tff-esn run --out)")
    drawn.add_argument("--model", default=None, metavar="DIR", help="a saved model folder (model.json, arrays.npz)")
    parser.add_argument("--data", default=None, metavar="SOURCE",
                        help="data driving the model for states and forecast (default: the run's; a model alone "
                             "has none)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="output folder (default: DIR/figures of a run, figures beside a model folder)")
    parser.add_argument("--units", type=int, default=6, metavar="N", help="units drawn by states (default 6)")
    parser.set_defaults(func=_plot)
