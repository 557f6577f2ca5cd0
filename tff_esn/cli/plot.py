"""``tff-esn plot KIND... --run DIR``: pictures of a finished run, drawn by :mod:`tff_esn.runs.plots`.

Kinds: ``reservoir`` (Ŵ's adjacency and degree distribution) and ``spectrum`` (Ŵ's eigenvalues and the
spectral-radius circle) of the run's saved model; ``states`` (x(t) of a few units, the model's reservoir
driven by the first test sequence of the run's data); ``forecast`` (a real-valued run's saved model
against the truth on its test sequences); ``learning-curve`` (per-round metrics of ``rounds.csv``); ``confusion`` (the test confusion
matrix of ``metrics.json``). Each is written to ``--out`` (default ``DIR/figures``) as PDF, SVG and PNG
with a caption.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from tff_esn.cli import UsageError

KINDS = ("reservoir", "spectrum", "states", "forecast", "learning-curve", "confusion")


def _record(folder: Path) -> dict[str, Any]:
    path = folder / "metrics.json"
    if not path.is_file():
        raise UsageError(f"--run {folder}: no metrics.json; give the folder of a finished run (tff-esn run --out).")
    return json.loads(path.read_text())


def _model(folder: Path):
    """The run's saved :class:`~tff_esn.esn.model.Model` (``DIR/model``)."""
    from tff_esn.esn.model import Model, ModelFormatError

    try:
        return Model.load(folder / "model")
    except ModelFormatError as err:
        raise UsageError(f"--run {folder}: {err}") from None


def _dataset(record: dict[str, Any], model):
    """The run's data as :func:`~tff_esn.runs.predictions.run_groups` reads it back, and its groups' client ids."""
    from tff_esn.cli.predict import load_for
    from tff_esn.runs.predictions import run_groups

    dataset, groups, how = run_groups(record, load_for(record, model, record["data"]))
    if groups is None:
        raise UsageError(f"plot: the run's data ({record['data']}) no longer holds its client groups: {how}.")
    return dataset, groups


def _states(model, x):
    """(steps, units) states of one (steps, features) sequence through the model's (first) reservoir."""
    import numpy as np

    from tff_esn.esn.states_numpy import states

    weights = model.members[0].reservoir
    x = np.asarray(x, np.float32)[None]
    x = model.inputs.apply(x) if model.inputs is not None else x
    return np.stack([s[0].copy() for s in states(x, weights.kernel, weights.recurrent, weights.bias, weights.gain,
                                                  weights.leaky, None, weights.layers, weights.activation)])


def draw(kind: str, folder: Path, record: dict[str, Any], units: int):
    """The figure of ``kind`` for the run in ``folder`` and its caption, from the run's saved model and records."""
    import numpy as np

    from tff_esn.runs import plots
    from tff_esn.runs.figures import dataset_title

    name = f"{record['algorithm']} on {dataset_title(record['data'])}"
    if kind == "confusion":
        group = "test" if record.get("test") else "val"
        matrix = (record.get(group) or {}).get("confusion")
        if matrix is None:
            raise UsageError(f"plot confusion: {folder}/metrics.json has no {group} confusion matrix (a real-valued "
                             "run, or a run written before confusion matrices were recorded).")
        labels = (record.get("partition") or {}).get("label_names") or [str(k) for k in range(len(matrix))]
        return (plots.plot_confusion(np.asarray(matrix), labels, f"{name}: {group} confusion"),
                f"Counts of {group} true class (rows, with recall) against predicted class of the run.")
    if kind == "learning-curve":
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
    model = _model(folder)
    member = model.members[0]
    weights, config = member.reservoir, member.config
    topology = f"{config.topology} " if config is not None else ""
    what = f"{topology}reservoir of {weights.units} units" + (f" (seed {config.seed})" if config is not None else "")
    if kind == "reservoir":
        return (plots.plot_reservoir(weights.recurrent, f"{name}: {what}"),
                f"Non-zero pattern and degree distribution of Ŵ of the run's {what}.")
    if kind == "spectrum":
        radius = config.spectral_radius if config is not None else None
        return (plots.plot_spectrum(weights.recurrent, radius, f"{name}: {what}"),
                f"Eigenvalues of Ŵ of the run's {what}, the circle of its spectral radius and the unit circle.")
    if kind == "forecast" and not model.task.real:
        raise UsageError(f"plot forecast: {record['data']} is a classification run; forecast needs --task forecast "
                         "or regress.")
    dataset, groups = _dataset(record, model)
    shown = "test" if groups.get("test") else "val" if groups.get("val") else "train"
    sequences = dataset.pooled(groups[shown])
    if kind == "states":
        x = sequences.x[0, :int(sequences.steps[0])]
        chosen = list(range(min(units, weights.units)))
        return (plots.plot_states(_states(model, x), f"{name}: reservoir states", chosen),
                f"States x_i(t) of units {chosen} of the run's reservoir driven by the first {shown} sequence "
                f"({len(x)} steps).")
    prediction = model.predict(sequences.x, sequences.lengths)
    truth = model.labels(sequences.y, len(sequences)).reshape(prediction.shape)
    per_step = prediction.ndim == 2
    if per_step:  # one sequence, step by step
        truth, prediction = truth[0, :int(sequences.steps[0]) - model.spec.washout], prediction[0, :len(truth[0])]
    train = dataset.pooled(groups["train"])
    mean = float(np.mean(model.labels(train.y, len(train))))
    return (plots.plot_forecast(truth, prediction, f"{name}: forecast", reference=mean),
            f"The run's saved model against the truth on the {'first ' + shown + ' sequence, step by step' if per_step else shown + ' sequences, one prediction each'}; "
            "the line is the training mean.")


def _plot(args: argparse.Namespace) -> int:
    from tff_esn.runs.figures import save_figure

    folder = Path(args.run)
    record = _record(folder)
    out = Path(args.out) if args.out else folder / "figures"
    kinds = KINDS if "all" in args.kinds else tuple(dict.fromkeys(args.kinds))
    for kind in kinds:
        try:
            figure, caption = draw(kind, folder, record, args.units)
        except UsageError as err:
            if "all" not in args.kinds:
                raise
            print(f"{kind}: skipped ({str(err).split(': ', 1)[1]})")
            continue
        paths = save_figure(figure, out / kind, caption)
        print(f"{kind} → {paths['pdf']}, {paths['svg'].name}, {paths['png'].name}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plot", help="draw a run's reservoir, spectrum, states, forecast, learning curve or confusion matrix",
        description="Draw pictures of a finished run folder as PDF, SVG and 300-dpi PNG with a caption file.")
    parser.add_argument("kinds", nargs="+", choices=(*KINDS, "all"), metavar="KIND",
                        help=f"what to draw: {', '.join(KINDS)} or all (each that applies to the run)")
    parser.add_argument("--run", required=True, metavar="DIR", help="a run folder (tff-esn run --out)")
    parser.add_argument("--out", default=None, metavar="DIR", help="output folder (default: DIR/figures)")
    parser.add_argument("--units", type=int, default=6, metavar="N", help="units drawn by states (default 6)")
    parser.set_defaults(func=_plot)
