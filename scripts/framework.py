"""The reproduction framework: experiments, run folders, tables, figures, claims, progress.

An :class:`Experiment` reproduces one group of published tables/figures. It is a function
``run(ctx, settings)`` plus its settings per profile (``tiny`` for tests, ``quick`` for
``make reproduce``, ``full`` for the seeds' own settings). The function calls library
code and records what it produced through its :class:`Context`:

* ``ctx.table(...)`` — a results table written atomically as CSV and Markdown, with the
  seed's published numbers in adjacent columns and the data each side was obtained on;
* ``ctx.figure(...)`` — a matplotlib figure saved as PDF, SVG and PNG with a caption (Agg backend);
* ``ctx.claim(...)`` — a published claim and whether this run agrees with it;
* ``ctx.step()`` — advances the experiment's progress bar.

:func:`scripts.runner.run_experiments` runs a selection into ``OUT/<experiment>/`` with one
overall bar and a bar per experiment (:func:`run_one` each). Each experiment leaves
``status.json`` (``done``, ``failed`` or ``not run`` with the reason, wall time, settings,
outputs, when it finished, the git commit of the source that ran and — for experiments whose
runs take ``reproduce --backend`` — the backend(s) their runs' ``metrics.json`` record); a failure is recorded and the next experiment runs. A ``done`` experiment with the
same profile, data, seed and (federated experiments) resolved backend is skipped unless
``force``. :func:`scripts.report.write_report` then writes ``OUT/report.md``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from tff_esn.common.io import write_csv_atomic, write_json_atomic, write_text_atomic
from tff_esn.common.progress import progress_bar
from tff_esn.runs.provenance import source_commit
from tff_esn.common.validation import SEED_MAX, is_seed

PROFILES = ("tiny", "quick", "full")
STATUS_FILE = "status.json"
DONE, FAILED, NOT_RUN = "done", "failed", "not run"
VERDICTS = ("agrees", "disagrees", "undetermined")
#: Why a claim disagrees: the data differ (synthetic vs real), the seed contradicts itself, the
#: seed's setting is decided by float rounding, or a remaining defect of ours. A disagreement with
#: no cause is reported as unexplained.
CAUSES = {"data": "the data differ (synthetic here, real in the seed)",
          "seed": "the seed's own inconsistency",
          "rounding": "float rounding decides the seed's setting (another float order gives another result)",
          "defect": "a remaining defect of ours"}
DATA_KINDS = ("wesad", "hhar")
NPZ_BUILTIN = "sklearn-digits"
"""The ``npz`` data kind's default: real digits shipped with scikit-learn (:mod:`scripts.digits_npz`)."""


class NotRun(Exception):
    """An experiment cannot run here (a library piece it needs is missing); the message says why."""


# ----------------------------------------------------------------------------- data sources
@dataclasses.dataclass(frozen=True)
class DataSources:
    """Where each data set comes from: the synthetic default or a real copy.

    Attributes:
        wesad: ``synthetic-wesad`` or ``wesad:DIR``.
        hhar: ``synthetic-hhar`` or ``hhar:DIR``.
        npz: bring-your-own sequences, ``npz:FILE``, or :data:`NPZ_BUILTIN`.
        cache_dir: cache of generated and preprocessed data (``None``: the library default).
        options: extra ``load_source`` options per kind (e.g. a smaller synthetic size for tests).
    """

    wesad: str = "synthetic-wesad"
    hhar: str = "synthetic-hhar"
    npz: str = NPZ_BUILTIN
    cache_dir: str | None = None
    options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind in DATA_KINDS:
            source = getattr(self, kind)
            if source != f"synthetic-{kind}" and not (source.startswith(f"{kind}:") and len(source) > len(kind) + 1):
                raise ValueError(f"{kind} source: expected 'synthetic-{kind}' or '{kind}:DIR', got {source!r}.")
        if self.npz != NPZ_BUILTIN and not (self.npz.startswith("npz:") and len(self.npz) > 4):
            raise ValueError(f"npz source: expected {NPZ_BUILTIN!r} or 'npz:FILE', got {self.npz!r}.")
        unknown = sorted(set(self.options) - set(DATA_KINDS))
        if unknown:
            raise ValueError(f"options: keys must be among {DATA_KINDS}, got {unknown}.")

    @classmethod
    def from_dirs(cls, wesad_dir: str | None = None, hhar_dir: str | None = None, **kwargs: Any) -> "DataSources":
        """Real copies where a folder is given (checked to exist), the synthetic default elsewhere."""
        sources = {}
        for kind, folder in (("wesad", wesad_dir), ("hhar", hhar_dir)):
            if folder is None:
                continue
            path = Path(folder).expanduser()
            if not path.is_dir():
                raise FileNotFoundError(f"--{kind}-dir: {folder} is not a folder.")
            sources[kind] = f"{kind}:{path.resolve()}"
        return cls(**sources, **kwargs)

    def source(self, kind: str) -> str:
        if kind not in (*DATA_KINDS, "npz"):
            raise ValueError(f"data kind: expected one of {(*DATA_KINDS, 'npz')}, got {kind!r}.")
        return getattr(self, kind)

    def synthetic(self, kind: str) -> bool:
        return self.source(kind).startswith("synthetic-")

    def describe(self, kind: str) -> str:
        """A phrase naming the data honestly (synthetic vs the real copy at a path)."""
        if kind == "npz":
            return ("scikit-learn's handwritten digits (real UCI data shipped with scikit-learn) as 8-step "
                    "sequences, label = parity, 20 random iid clients" if self.npz == NPZ_BUILTIN
                    else f"bring-your-own npz at {self.npz.split(':', 1)[1]}")
        if self.synthetic(kind):
            return f"synthetic {kind.upper()} (tff_esn's generator; not the real data set)"
        return f"real {kind.upper()} at {self.source(kind).split(':', 1)[1]}"

    def to_dict(self) -> dict[str, Any]:
        return {"wesad": self.wesad, "hhar": self.hhar, "npz": self.npz, "cache_dir": self.cache_dir,
                "options": {k: dict(v) for k, v in self.options.items()}}


# ----------------------------------------------------------------------------- values
@dataclasses.dataclass(frozen=True)
class MeanStd:
    """A mean ± standard deviation over repetitions (population std, ``ddof=0``)."""

    mean: float
    std: float
    n: int = 1

    @classmethod
    def of(cls, values: Iterable[float]) -> "MeanStd":
        arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
        if arr.size == 0:
            return cls(math.nan, math.nan, 0)
        return cls(float(arr.mean()), float(arr.std()), int(arr.size))

    def scaled(self, factor: float) -> "MeanStd":
        return MeanStd(self.mean * factor, self.std * factor, self.n)


def fmt(value: Any, digits: int = 4) -> str:
    """A Markdown cell: floats with ``digits`` decimals, MeanStd/(m, s) as ``m ± s``, None as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, MeanStd):
        return "-" if math.isnan(value.mean) else f"{fmt(value.mean, digits)} ± {fmt(value.std, digits)}"
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"{fmt(value[0], digits)} ± {fmt(value[1], digits)}"
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value).replace("|", "\\|")


def _csv_cells(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, MeanStd):
            out[key], out[f"{key} (std)"] = value.mean, value.std
        elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            out[key], out[f"{key} (std)"] = value
        else:
            out[key] = value
    return out


@dataclasses.dataclass(frozen=True)
class Claim:
    """A published claim and this run's verdict on it.

    Attributes:
        statement: the claim, in the seed's words or a faithful paraphrase.
        reference: where it is published.
        verdict: ``agrees``, ``disagrees`` or ``undetermined``.
        evidence: our numbers and the criterion applied.
        cause: for a disagreement, one of :data:`CAUSES` (``None``: not yet explained).
        reason: why that cause, with the evidence for it.
    """

    statement: str
    reference: str
    verdict: str
    evidence: str
    cause: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"Claim.verdict: expected one of {VERDICTS}, got {self.verdict!r}.")
        if self.cause is not None and self.cause not in CAUSES:
            raise ValueError(f"Claim.cause: expected one of {tuple(CAUSES)} or None, got {self.cause!r}.")
        if self.cause is not None and not self.reason:
            raise ValueError("Claim.reason: a cause needs the reason that supports it.")


def verdict(holds: bool | None) -> str:
    """``agrees`` / ``disagrees`` for a checked criterion, ``undetermined`` for ``None``."""
    return "undetermined" if holds is None else "agrees" if holds else "disagrees"


# ----------------------------------------------------------------------------- experiment
@dataclasses.dataclass(frozen=True)
class Experiment:
    """One reproduction script's unit of work.

    Attributes:
        name: folder and command-line name (``incfed-tables``).
        group: ``thesis``, ``incfed``, ``pfedrr``, ``fedip``, ``privacy`` or ``forecasting``
            (``tff-esn reproduce GROUP``).
        title: one line for the report.
        reproduces: the published tables/figures it re-runs.
        run: ``run(ctx, settings)``.
        settings: settings per profile (frozen dataclasses; ``steps`` gives the bar's total).
        data: data kinds it reads (``wesad``, ``hhar``).
        requires: modules that must be importable, else the experiment is "not run".
        federated: its runs take the request's backend (``reproduce --backend``): FedAvg/FedCurv the
            backend itself, IncFed/FedIP :func:`closed_form_backend` (a run's own ``backend`` flag wins).
    """

    name: str
    group: str
    title: str
    reproduces: str
    run: Callable[["Context", Any], None]
    settings: Mapping[str, Any]
    data: tuple[str, ...] = ("wesad",)
    requires: tuple[str, ...] = ()
    federated: bool = False

    def __post_init__(self) -> None:
        missing = [p for p in PROFILES if p not in self.settings]
        if missing:
            raise ValueError(f"experiment {self.name!r}: settings missing for profile(s) {missing}.")


GROUPS = ("thesis", "incfed", "pfedrr", "fedip", "privacy", "forecasting")
_REGISTRY: dict[str, Experiment] = {}
MODULES = ("scripts.data_summary", "scripts.thesis_central", "scripts.thesis_tuning", "scripts.thesis_federated",
           "scripts.thesis_discriminative", "scripts.thesis_preliminary", "scripts.thesis_partial",
           "scripts.incfed_tables", "scripts.pfedrr_table", "scripts.fedip_table", "scripts.privacy",
           "scripts.forecasting")
"""The reproduction scripts, in the order ``all`` runs them."""


def register(experiment: Experiment) -> Experiment:
    if experiment.group not in GROUPS + ("data",):
        raise ValueError(f"experiment {experiment.name!r}: group must be one of {GROUPS}, got {experiment.group!r}.")
    _REGISTRY[experiment.name] = experiment
    return experiment


def experiments() -> dict[str, Experiment]:
    """Every registered experiment, in :data:`MODULES` order."""
    for module in MODULES:
        importlib.import_module(module)
    order = {module: i for i, module in enumerate(MODULES)}
    return dict(sorted(_REGISTRY.items(), key=lambda item: order.get(item[1].run.__module__, len(order))))


def select(target: str) -> list[Experiment]:
    """``all`` (the data summary first), a group (``thesis`` ...) or an experiment name."""
    known = experiments()
    if target == "all":
        return list(known.values())
    if target in GROUPS:
        return [e for e in known.values() if e.group == target]
    if target in known:
        return [known[target]]
    raise ValueError(f"reproduce target: expected 'all', one of {GROUPS} or an experiment "
                     f"({', '.join(known)}), got {target!r}.")


# ----------------------------------------------------------------------------- context
_DATA_CACHE: dict[tuple, Any] = {}


class Context:
    """What an experiment's ``run`` uses: data, run folders, tables, figures, claims, progress."""

    def __init__(self, experiment: Experiment, out: Path, profile: str, data: DataSources, seed: int, bar: tqdm,
                 backend: str = "auto"):
        self.experiment = experiment
        self.out = out
        self.profile = profile
        self.data = data
        self.seed = seed
        self.bar = bar
        self.backend = backend
        self.backends: set[str] = set()
        self.tables: list[dict[str, Any]] = []
        self.figures: list[dict[str, Any]] = []
        self.claims: list[Claim] = []
        self.notes: list[str] = []

    # ---- data
    def dataset(self, kind: str, pipeline: str, **options: Any):
        """``load_source(source of kind, pipeline)``, loaded once per process."""
        try:
            from tff_esn.data.sources import load_source
        except ModuleNotFoundError as err:
            raise NotRun(f"the data layer is not available ({err.name} missing)") from None
        merged = {**self.data.options.get(kind, {}), **options}
        source = self.data.source(kind)
        if source == NPZ_BUILTIN:
            from scripts.digits_npz import digits_npz
            from tff_esn.data.cache import cache_root

            source = f"npz:{digits_npz(cache_root(self.data.cache_dir))}"
        key = (source, pipeline, self.data.cache_dir, tuple(sorted(merged.items())))
        if key not in _DATA_CACHE:
            _DATA_CACHE[key] = load_source(source, pipeline, cache_dir=self.data.cache_dir, **merged)
        return _DATA_CACHE[key]

    def split(self, name: str, dataset, *, train_fraction: float = 1.0, seed: int | None = None):
        """``get_split(name, dataset, train_fraction=, seed=)`` (seed defaults to the run's)."""
        from tff_esn.data.splits import get_split

        return get_split(name, dataset, train_fraction=train_fraction, seed=self.seed if seed is None else seed)

    def on(self, kind: str) -> str:
        """The data phrase of a table whose numbers come from ``kind``."""
        return self.data.describe(kind)

    # ---- algorithm runs
    def cached(self, tag: str, compute: Callable[[Path], Mapping[str, Any]]) -> dict[str, Any]:
        """``compute(folder)``'s record, stored in ``runs/<tag>/metrics.json``; a record already
        there (an interrupted experiment being re-run) is reused without computing."""
        folder = self.out / "runs" / tag
        done = folder / "metrics.json"
        if not done.exists():
            write_json_atomic(done, compute(folder))
        record = json.loads(done.read_text())
        backend = (record.get("extra") or {}).get("backend")
        if backend is not None:
            self.backends.add(backend)
        return record

    def run(self, algorithm: str, dataset, split, tag: str, **flags: Any) -> dict[str, Any]:
        """Runs ``algorithm`` of the run registry with its config's defaults overridden by
        ``flags`` (settings by flag name, :func:`run_config`), cached under ``tag`` (:meth:`cached`)."""
        from tff_esn.registry import algorithms

        def compute(folder: Path) -> dict[str, Any]:
            config = self.run_config(algorithm, folder, **flags)
            return algorithms.run_algorithm(algorithms.resolve_run(algorithm, dataset, config=config), dataset, split)

        return self.cached(tag, compute)

    @property
    def cache_dir(self) -> Path:
        """Where runs cache what they can share (the federated runs' harvested client states, keyed
        by inputs, reservoir and noise): the data cache when given, else ``OUT/cache``."""
        return Path(self.data.cache_dir) if self.data.cache_dir else self.out.parent / "cache"

    def run_config(self, algorithm: str, folder: Path, **flags: Any):
        """:func:`run_config` writing to ``folder`` with this run's cache folder, resuming a federated
        run left in ``folder``, without a progress bar of its own; a federated experiment's
        FedAvg/FedCurv runs on the request's backend."""
        run = {"out": str(folder), "cache_dir": str(self.cache_dir), "resume": (folder / "checkpoints").exists(),
               "progress": False}
        if self.experiment.federated:
            run["backend"] = self.backend if _federated(algorithm) else closed_form_backend(self.backend)
        return run_config(algorithm, **{**_settings_of(algorithm, run), **flags})

    # ---- outputs
    def table(self, name: str, title: str, rows: Sequence[Mapping[str, Any]], *, ours: str,
              published: str | None = None, note: str | None = None, digits: int = 4) -> None:
        """Writes ``name.csv`` and ``name.md``: ``ours`` and ``published`` say which data each side used."""
        if not rows:
            raise ValueError(f"table {name!r}: no rows.")
        columns = list(dict.fromkeys(k for r in rows for k in r))
        csv_rows = [_csv_cells({c: r.get(c) for c in columns}) for r in rows]
        csv_cols = list(dict.fromkeys(k for r in csv_rows for k in r))
        write_csv_atomic(self.out / f"{name}.csv", csv_rows, fieldnames=csv_cols)
        lines = [f"**{title}**", "", f"Ours: {ours}." + (f" Published: {published}." if published else ""), ""]
        lines += ["| " + " | ".join(fmt(c) for c in columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(fmt(r.get(c), digits) for c in columns) + " |" for r in rows]
        if note:
            lines += ["", note]
        write_text_atomic(self.out / f"{name}.md", "\n".join(lines) + "\n")
        self.tables.append({"name": name, "title": title, "csv": f"{name}.csv", "md": f"{name}.md"})

    def figure(self, name: str, title: str, fig) -> None:
        """Saves a matplotlib figure as ``name.pdf``, ``.svg`` and a 300-dpi ``.png`` with ``title`` and the run's
        profile and seed as ``name.caption.md`` (:func:`~tff_esn.runs.figures.save_figure`); closes it."""
        from tff_esn.runs.figures import save_figure

        save_figure(fig, self.out / name, f"{title}. Experiment {self.experiment.name}, profile {self.profile}, "
                                          f"seed {self.seed}.")
        self.figures.append({"name": name, "title": title, "png": f"{name}.png", "pdf": f"{name}.pdf",
                             "svg": f"{name}.svg"})

    def claim(self, statement: str, reference: str, holds: bool | None, evidence: str, *,
              cause: str | None = None, reason: str = "") -> None:
        """Record a published claim and our verdict; ``cause``/``reason`` explain a disagreement
        (ignored when the claim holds)."""
        disagrees = verdict(holds) == "disagrees"
        self.claims.append(Claim(statement, reference, verdict(holds), evidence,
                                 cause if disagrees else None, reason if disagrees else ""))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def step(self, n: int = 1, **postfix: Any) -> None:
        self.bar.update(n)
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)


def _settings_of(algorithm: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` that ``algorithm``'s config has (e.g. ``out`` only for federated runs)."""
    from tff_esn.registry import algorithms

    fields = algorithms.config_fields(algorithms.get_algorithm(algorithm).config)
    return {k: v for k, v in values.items() if k in fields}


def closed_form_backend(backend: str) -> str:
    """The closed-form algorithms' backend (IncFed, FedIP: ``tff`` or their exact ``numpy`` twin) for a
    request's ``reproduce --backend``: TFF's computations with ``tff``, else the numpy path."""
    return "tff" if backend == "tff" else "numpy"


def _federated(algorithm: str) -> bool:
    """Whether ``algorithm`` trains the thesis model in a federation (FedAvg/FedCurv: it has a backend to choose)."""
    from tff_esn.federated.configs import federated_algorithms

    return algorithm in federated_algorithms()


def run_config(algorithm: str, **flags: Any):
    """``algorithm``'s typed config (:mod:`tff_esn.registry.algorithms`) with ``flags`` set — its settings
    by flag name (``units``, ``l2``, ``server_lr``, ``reservoir``, ``ip_sigma``, ...).

    Defaults come from the config class, so an experiment states only what it changes; an
    unknown setting is an error naming it.
    """
    from tff_esn.registry import algorithms

    return algorithms.config_from_flags(algorithms.get_algorithm(algorithm).config, flags)


# ----------------------------------------------------------------------------- runner
@dataclasses.dataclass(frozen=True)
class ReproductionRequest:
    """One ``reproduce`` invocation: what, how big, on which data, where."""

    target: str
    profile: str
    data: DataSources
    out: Path
    seed: int = 0
    force: bool = False
    progress: bool = True
    backend: str = "auto"

    def __post_init__(self) -> None:
        from tff_esn.federated.configs import BACKENDS

        if self.profile not in PROFILES:
            raise ValueError(f"profile: expected one of {PROFILES}, got {self.profile!r}.")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend: expected one of {BACKENDS}, got {self.backend!r}.")
        reps = max((getattr(e.settings[self.profile], "repetitions", 1) for e in select(self.target)), default=1)
        if not is_seed(self.seed) or self.seed + reps - 1 > SEED_MAX:
            raise ValueError(f"seed: expected an integer in [0, {SEED_MAX - reps + 1}] (repetition r of {reps} uses "
                             f"seed + r, at most {SEED_MAX}), got {self.seed!r}.")


def data_kinds(experiment: Experiment, profile: str) -> tuple[str, ...]:
    """The data an experiment reads in a profile: its settings' ``datasets`` when it has them."""
    return tuple(getattr(experiment.settings[profile], "datasets", experiment.data))


def _identity(request: ReproductionRequest, experiment: Experiment) -> dict[str, Any]:
    settings = experiment.settings[request.profile]
    kinds = data_kinds(experiment, request.profile)
    identity = {"profile": request.profile, "seed": request.seed,
                "data": {k: request.data.source(k) for k in kinds},
                "data_options": {k: dict(request.data.options.get(k, {})) for k in kinds},
                "settings": dataclasses.asdict(settings)}
    if experiment.federated:
        from tff_esn.federated.configs import resolve_backend

        identity["backend"] = resolve_backend(request.backend)
    return identity


def read_status(folder: Path) -> dict[str, Any] | None:
    path = folder / STATUS_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _missing_requirement(experiment: Experiment) -> str | None:
    for module in experiment.requires:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            return f"{module} is not available ({err.name} missing)"
    return None


def run_one(experiment: Experiment, request: ReproductionRequest, *, position: int = 1) -> dict[str, Any]:
    """Runs (or skips) one experiment; always returns and writes its status record."""
    folder = request.out / experiment.name
    identity = _identity(request, experiment)
    previous = read_status(folder)
    same = previous is not None and {k: previous.get(k) for k in identity} == json.loads(json.dumps(identity))
    if same and previous.get("status") == DONE and not request.force:
        previous["skipped"] = True
        return previous
    if folder.exists() and (request.force or not same):
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = experiment.settings[request.profile]
    total = int(getattr(settings, "steps", 1))
    bar = progress_bar(wanted=request.progress, total=total, desc=experiment.name, position=position, leave=False,
                       unit="step")
    ctx = Context(experiment, folder, request.profile, request.data, request.seed, bar, backend=request.backend)
    record = {"name": experiment.name, "title": experiment.title, "reproduces": experiment.reproduces,
              "group": experiment.group, **identity,
              "data_descriptions": {k: request.data.describe(k) for k in data_kinds(experiment, request.profile)}}
    start = time.perf_counter()
    try:
        reason = _missing_requirement(experiment)
        if reason is not None:
            raise NotRun(reason)
        experiment.run(ctx, settings)
        record["status"] = DONE
    except NotRun as err:
        record["status"], record["reason"] = NOT_RUN, str(err)
    except Exception as err:  # noqa: BLE001 — one experiment's failure must not lose the others
        record["status"], record["reason"] = FAILED, f"{type(err).__name__}: {err}"
        write_text_atomic(folder / "error.txt", traceback.format_exc())
    finally:
        bar.close()
    record.update(seconds=time.perf_counter() - start, tables=ctx.tables, figures=ctx.figures,
                  claims=[dataclasses.asdict(c) for c in ctx.claims], notes=ctx.notes, skipped=False,
                  backends=sorted(ctx.backends),
                  finished=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit=source_commit())
    write_json_atomic(folder / STATUS_FILE, record)
    return record
