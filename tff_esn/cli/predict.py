"""``tff-esn predict --run DIR --data SOURCE [--out FILE]``: a run's saved model on a data source.

Loads ``DIR/model``, reads SOURCE as the run read its data (pipeline, task, ragged/missing and series settings from
``DIR/metrics.json``), checks it against the model, and writes one CSV row per prediction (FILE, else standard
output) and, where SOURCE holds labels or targets, each group's metrics (``FILE`` with ``.metrics.json``). Groups
are the run's (``metrics.json["clients"]``) when SOURCE holds its clients, so the numbers equal the run's.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from tff_esn.cli import UsageError

SOURCE_FLAGS = ("task", "horizon", "target", "series_clients", "series_steps", "series_split", "ragged", "missing",
                "squared_inputs")
"""The run's recorded flags (``metrics.json["cli"]``) that say how its source was read."""


def _source_options(record: dict[str, Any], source: str) -> dict[str, Any]:
    """``load_source``'s options for ``source`` from the run's recorded flags (those that apply to it)."""
    from tff_esn.cli.run import source_options
    from tff_esn.data.source_names import is_series
    from tff_esn.registry.defaults import OWN_DATA_SOURCES
    from tff_esn.data.sources import parse_source

    kind, _ = parse_source(source)
    cli = record.get("cli") or {}
    flags = {k: cli.get(k) for k in SOURCE_FLAGS}
    flags["seed"] = ((record.get("config") or {}).get("seed") or {}).get("value")  # a generated series' draw
    if not is_series(kind) or ":" in source:
        flags.update(series_clients=None, series_steps=None, series_split=None)
    if kind not in OWN_DATA_SOURCES:
        flags["ragged"] = None
    if kind != "ts":
        flags["missing"] = None
    if flags["task"] != "forecast":
        flags.update(horizon=None, target=None)
    return source_options(argparse.Namespace(data=source, **flags))


def load_for(record: dict[str, Any], model: Any, source: str, *, cache_dir: str | None = None) -> Any:
    """``source`` read as the run of ``record`` read its data (pipeline, flags), for ``model``'s task."""
    from tff_esn.data.errors import DataError
    from tff_esn.data.sources import load_source
    from tff_esn.registry.defaults import default_pipeline

    try:
        options = _source_options(record, source)
        options["task"] = model.task
        pipeline = ((record.get("config") or {}).get("pipeline") or {}).get("value") or default_pipeline(source)
        return load_source(source, pipeline, cache_dir=cache_dir, **options)
    except (DataError, UsageError):
        raise
    except (ValueError, TypeError) as err:
        raise UsageError(str(err)) from None


def _predict(args: argparse.Namespace) -> int:
    from tff_esn.esn.model import Model, ModelFormatError
    from tff_esn.common.io import write_json_atomic, write_text_atomic
    from tff_esn.runs.predictions import predict_dataset, run_groups

    run = Path(args.run).expanduser()
    try:
        model = Model.load(run / "model")
    except ModelFormatError as err:
        raise UsageError(str(err)) from None
    metrics_file = run / "metrics.json"
    record = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    dataset, groups, how = run_groups(record, load_for(record, model, args.data, cache_dir=args.cache_dir))
    result = predict_dataset(model, dataset, groups)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(result.columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(result.rows)
    report = {"run": str(run), "data": dataset.source, "groups": how,
              "clients": {g: list(ids) for g, ids in result.groups.items()}, **result.metrics}
    if args.out is None:
        sys.stdout.write(text.getvalue())
        print(_summary(result.metrics, how), file=sys.stderr)
        return 0
    out = Path(args.out)
    write_text_atomic(out, text.getvalue())
    metrics_path = write_json_atomic(out.with_suffix(".metrics.json"), report)
    print(f"{len(result.rows)} prediction(s) → {out}; metrics → {metrics_path}\n{_summary(result.metrics, how)}")
    return 0


def _summary(metrics: dict[str, dict[str, Any]], how: str) -> str:
    """One line per group: accuracy and macro-F1, or NRMSE and R²; then how the groups were formed."""
    lines = []
    for group, m in metrics.items():
        keys = ("nrmse", "rmse", "r2") if "nrmse" in m else ("accuracy", "f1_macro")
        values = " ".join(f"{k} {m[k]:.4f}" if isinstance(m.get(k), float) else f"{k} n/a" for k in keys)
        lines.append(f"{group}: {values}")
    return "\n".join(lines + [f"groups: {how}"])


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict with a run's saved model (DIR/model) on a data source",
        description="Predict with the model a run saved in DIR/model on SOURCE (read as the run read its data), "
                    "one CSV row per prediction; where SOURCE has labels or targets, each group's metrics.")
    parser.add_argument("--run", required=True, metavar="DIR", help="the run folder (DIR/model, DIR/metrics.json)")
    parser.add_argument("--data", required=True, metavar="SOURCE",
                        help="a data source as for tff-esn run (npz:FILE, ts:DIR/NAME, a generated series, "
                             "synthetic-wesad, …)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="the predictions CSV (default: standard output); the metrics go to FILE with suffix "
                             ".metrics.json")
    parser.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    parser.set_defaults(func=_predict)
