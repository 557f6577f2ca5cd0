"""``tff-esn plot KIND... --run DIR``: pictures of a finished run, drawn by :mod:`tff_esn.runs.plots`.

Kinds: ``reservoir`` (Ŵ's adjacency and degree distribution) and ``spectrum`` (Ŵ's eigenvalues and the
spectral-radius circle), redrawn from the run's recorded configuration; ``states`` (x(t) of a few units,
the reservoir driven by the first test sequence of the run's data); ``forecast`` (a real-valued run's
test prediction against the truth, from the run's reservoir and λ refitted on the pooled training
states); ``learning-curve`` (per-round metrics of ``rounds.csv``); ``confusion`` (the test confusion
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


def reservoir_config(record: dict[str, Any]):
    """The run's :class:`~tff_esn.esn.hyperparameters.ReservoirConfig`: ``metrics.json``'s config with the values its
    validation selection chose (``selection``: leaking rate, spectral radius, input scaling) over it."""
    from tff_esn.common.settings import config_fields, config_from_flags
    from tff_esn.esn.hyperparameters import ReservoirConfig

    fields = config_fields(ReservoirConfig)
    values = {k: v["value"] for k, v in (record.get("config") or {}).items() if k in fields}
    values.update({k: v for k, v in (record.get("selection") or {}).items() if k in fields})
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return config_from_flags(ReservoirConfig, values, strict=False)


def _dataset(record: dict[str, Any]):
    """The run's data read as the run read it (its recorded source options), and its split."""
    from tff_esn.cli.run import source_options
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split
    from tff_esn.registry.defaults import default_pipeline, default_split

    config = record.get("config") or {}
    pipeline = (config.get("pipeline") or {}).get("value") or default_pipeline(record["data"])
    cli = {k: None for k in ("task", "horizon", "target", "ragged", "missing")}
    cli.update(record.get("cli") or {})
    seed = (config.get("seed") or {}).get("value")
    options = source_options(argparse.Namespace(**{**cli, "data": record["data"], "seed": seed}))
    dataset = load_source(record["data"], pipeline, **options)
    split_name = (config.get("split") or {}).get("value") or default_split(record["data"], pipeline)
    return dataset, get_split(split_name, dataset)


def _states(weights, x):
    """(steps, units) states of one (steps, features) sequence."""
    import numpy as np

    from tff_esn.esn.states_numpy import states

    return np.stack([s[0].copy() for s in states(np.asarray(x, np.float32)[None], weights.kernel, weights.recurrent,
                                                  weights.bias, weights.gain, weights.leaky, None, weights.layers,
                                                  weights.activation)])


def refitted_forecast(record: dict[str, Any], dataset, split, weights):
    """``(truth, prediction, training mean)`` on the first test sequence: the ridge readout (IncFed eq. 3) of the
    pooled training states of the run's reservoir at the run's λ, after its washout."""
    import numpy as np

    from tff_esn.esn.ridge import RidgeStats, predict

    config = record.get("config") or {}
    washout = int((config.get("washout") or {}).get("value") or 0)
    l2 = (record.get("l2_selection") or {}).get("l2", (config.get("l2") or {}).get("value"))
    l2 = float(l2) if isinstance(l2, (int, float)) else 1e-6
    train = dataset.pooled(split.train)
    rows = [(_states(weights, train.x[i, :n])[washout:], train.y[i, washout:n]) for i, n in enumerate(train.steps)]
    stats = RidgeStats.from_states(np.concatenate([s for s, _ in rows]),
                                   np.concatenate([y for _, y in rows])[:, None], bias=True)
    readout = stats.solve(l2)
    test = dataset.pooled(split.test or split.val)
    steps = int(test.steps[0])
    prediction = predict(readout, _states(weights, test.x[0, :steps])[washout:], bias=True)[:, 0]
    return test.y[0, washout:steps], prediction, float(np.concatenate([y for _, y in rows]).mean())


def draw(kind: str, folder: Path, record: dict[str, Any], units: int):
    """The figure of ``kind`` for the run in ``folder`` and its caption."""
    import numpy as np

    from tff_esn.esn.weights import ReservoirWeights
    from tff_esn.runs import plots
    from tff_esn.runs.figures import dataset_title

    name = f"{record['algorithm']} on {dataset_title(record['data'])}"
    if kind in ("reservoir", "spectrum"):
        config = reservoir_config(record)
        weights = ReservoirWeights.from_config(config, 1)
        what = f"{config.topology} reservoir of {weights.units} units (seed {config.seed})"
        if kind == "reservoir":
            return (plots.plot_reservoir(weights.recurrent, f"{name}: {what}"),
                    f"Non-zero pattern and degree distribution of Ŵ of the run's {what}.")
        return (plots.plot_spectrum(weights.recurrent, config.spectral_radius, f"{name}: {what}"),
                f"Eigenvalues of Ŵ of the run's {what}, the circle of its spectral radius and the unit circle.")
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
    dataset, split = _dataset(record)
    config = reservoir_config(record)
    weights = ReservoirWeights.from_config(config, len(dataset.feature_names))
    if kind == "states":
        sequence = dataset.pooled(split.test or split.train)
        x = sequence.x[0, :int(sequence.steps[0])]
        chosen = list(range(min(units, weights.units)))
        return (plots.plot_states(_states(weights, x), f"{name}: reservoir states", chosen),
                f"States x_i(t) of units {chosen} of the run's reservoir driven by the first "
                f"{'test' if split.test else 'training'} sequence ({len(x)} steps).")
    if not dataset.task.real:
        raise UsageError(f"plot forecast: {record['data']} is a classification run; forecast needs --task forecast "
                         "or regress.")
    truth, prediction, mean = refitted_forecast(record, dataset, split, weights)
    return (plots.plot_forecast(truth, prediction, f"{name}: forecast", reference=mean),
            "Prediction against truth on the first test sequence: the ridge readout of the run's reservoir at the "
            "run's λ refitted on the pooled training states (IncFed's and the centralized readout exactly).")


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
