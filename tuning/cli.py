"""``tff-esn tune SPACE --data SOURCE --trials N --out DIR``: a thin layer over :func:`tuning.search.tune`.

Registered through the ``tff_esn.commands`` entry-point group (setup.cfg), so ``tff_esn``
never imports ``tuning``.
"""

from __future__ import annotations

import argparse

from tff_esn.cli import lazy_command
from tff_esn.cli.flags import add_setting_flags
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.common.settings import pick_settings, settings

STATES = pick_settings(settings(ReadoutConfig), ("state_mode", "washout", "readout_bias"))
"""The ridge readouts' state settings (closed-form spaces), as ``tff-esn run`` has them."""

SUGGESTED_RUN = {"gradient": "fedavg", "closed-form": "incfed"}


HELP = "KerasTuner random search over a published space; writes best_hparams.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    """``tff-esn tune``; its flags (the spaces need KerasTuner) are built when the command runs."""
    lazy_command(subparsers, "tune", _add_arguments, help=HELP)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    from tuning.spaces import SPACES

    spaces = "; ".join(f"{s.name} ({s.reference})" for s in SPACES.values())
    parser.description = (f"Random search over a named space and write DIR/best_hparams.json for "
                          f"`tff-esn run ... --hparams`. Running again with the same --out resumes. Spaces: {spaces}.")
    parser.add_argument("space", choices=list(SPACES), metavar="SPACE", help=f"one of {', '.join(SPACES)}")
    parser.add_argument("--data", default=None, metavar="SOURCE",
                        help="synthetic-wesad, synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE or ts:DIR/NAME "
                             "(default: the space's synthetic source; npz:/ts: data take the closed-form spaces, "
                             "the own-data state settings and balanced accuracy)")
    parser.add_argument("--trials", type=int, default=None, metavar="N",
                        help="total trial budget (default: the published one — 30, or the whole space for thesis)")
    parser.add_argument("--out", required=True, metavar="DIR", help="search folder (resumed when it exists)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the oracle, reservoir and data split")
    parser.add_argument("--overwrite", action="store_true", help="start over instead of resuming DIR")
    add_setting_flags(parser, STATES, title="states of the ridge readouts (closed-form spaces)")
    parser.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    parser.add_argument("--top", type=int, default=5, help="rows of the summary table (default 5)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.set_defaults(func=_run, holds_out=True)


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from tff_esn.cli import UsageError
    from tff_esn.cli.flags import given
    from tuning.search import SearchError, default_spec, tune
    from tuning.spaces import SPACES

    spec = dataclasses.replace(default_spec(args.data or SPACES[args.space].source), **given(args))
    try:
        result = tune(args.space, data=args.data, trials=args.trials, out=args.out, seed=args.seed,
                      overwrite=args.overwrite, spec=spec, cache_dir=args.cache_dir, progress=args.progress)
    except SearchError as err:
        raise UsageError(str(err)) from None
    print(result.summary(args.top))
    algorithm = SUGGESTED_RUN[SPACES[args.space].kind]
    if result.default_score is not None:
        print(f"own-data default: {result.objective} {result.default_score:.4f}"
              + ("; no trial scored higher, the default is recommended" if result.recommends_default else ""))
    print(f"best {result.objective} {result.best_score:.4f} → {result.out / 'best_hparams.json'} "
          f"(e.g. tff-esn run {algorithm} --hparams {result.out / 'best_hparams.json'} --out RUN_DIR)")
    return 0
