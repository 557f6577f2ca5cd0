"""The task flags of ``run`` (``--task forecast --horizon 5``) and the generated series' flags; light."""

from __future__ import annotations

import argparse
from typing import Any

from tff_esn.cli import UsageError
from tff_esn.data.source_names import is_series
from tff_esn.tasks import TASK_KINDS, Task

SERIES_FLAGS = ("series_clients", "series_steps", "series_split")


def add_task_arguments(group: argparse._ActionsContainer) -> None:
    group.add_argument("--task", choices=TASK_KINDS, default=None,
                       help="what the readout predicts: classes (classify), a channel --horizon steps ahead "
                            "(forecast) or a file's real y (regress); default: what the data holds (forecast on a "
                            "generated series)")
    group.add_argument("--horizon", type=int, default=None, metavar="H",
                       help="--task forecast: predict the target channel H steps after the states (default 1)")
    group.add_argument("--target", default=None, metavar="CHANNEL",
                       help="--task forecast: the channel predicted (default: the series' own: y of narma, x of "
                            "mackey-glass and lorenz)")
    group.add_argument("--series-clients", type=int, default=None, metavar="N",
                       help="generated series: training clients (default 10; one validation and one test client "
                            "follow)")
    group.add_argument("--series-steps", type=int, default=None, metavar="T",
                       help="generated series: steps per client (default 1000)")
    group.add_argument("--series-split", choices=("segments", "realisations"), default=None,
                       help="generated series: clients are contiguous segments of one realisation (default) or "
                            "realisations of their own (other initial conditions / inputs: non-IID)")


def task_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``load_source`` options of the task and series flags: ``task`` (a :class:`Task`, when
    given or implied by ``--horizon``/``--target``) and a series' ``clients``, ``steps``,
    ``split_by`` and ``seed``; a flag that does not apply is a :class:`UsageError`. A command without
    the flags (``compare``) reads a series with its defaults."""
    flags = {name: getattr(args, name, None) for name in ("task", "horizon", "target", *SERIES_FLAGS)}
    series = is_series(args.data.split(":", 1)[0]) and ":" not in args.data
    kind = flags["task"] or ("forecast" if series else None)
    if kind != "forecast" and (flags["horizon"] is not None or flags["target"] is not None):
        raise UsageError("--horizon/--target: apply to --task forecast only.")
    options: dict[str, Any] = {}
    if kind is not None:
        try:
            options["task"] = Task(kind, flags["horizon"] or 1, flags["target"]) if kind == "forecast" else Task(kind)
        except ValueError as err:
            raise UsageError(str(err)) from None
    given = {name: flags[name] for name in SERIES_FLAGS if flags[name] is not None}
    if given and not series:
        raise UsageError(f"--{next(iter(given)).replace('_', '-')}: applies to a generated series (narma10, "
                         f"mackey-glass, lorenz, sine), got --data {args.data}.")
    if series:
        names = {"series_clients": "clients", "series_steps": "steps", "series_split": "split_by"}
        options.update({names[name]: value for name, value in given.items()}, seed=getattr(args, "seed", None) or 0)
    return options
