"""The data every experiment uses: clients, sequences, shapes and class balance per pipeline.

Runs first in ``reproduce all``, so the synthetic data are generated (and every pipeline's
cache filled) before the experiments; the table is the analogue of thesis Table 5.1's
label shares for each pipeline. On the synthetic WESAD a second table says what its wrist
model was calibrated to: thesis Table 5.1's feature statistics (min/max/mean/var of pEDA,
tEDA, HR, HRV over all subjects), its class shares and §5.2's ~6000 steps per subject —
the data description, never a result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from scripts.common import plt
from scripts.framework import Context, Experiment, register


@dataclasses.dataclass(frozen=True)
class Settings:
    pipelines: tuple[tuple[str, str], ...] = (
        ("wesad", "thesis"), ("wesad", "incfed-wesad"), ("wesad", "pfedrr-wesad"), ("wesad", "fedip-wesad"),
        ("hhar", "incfed-hhar"), ("hhar", "pfedrr-hhar"), ("hhar", "fedip-hhar"),
    )

    calibration: bool = True

    @property
    def steps(self) -> int:
        return len(self.pipelines)


def run(ctx: Context, s: Settings) -> None:
    rows = []
    for kind, pipeline in s.pipelines:
        data = ctx.dataset(kind, pipeline)
        labels = np.concatenate([c.y.reshape(-1) for c in data.clients.values()])
        shares = np.bincount(labels, minlength=data.n_classes) / labels.size
        first = next(iter(data.clients.values()))
        rows.append({
            "data": f"{'synthetic' if ctx.data.synthetic(kind) else 'real'} {kind.upper()}", "pipeline": pipeline, "clients": len(data.clients),
            "sequences": sum(len(c) for c in data.clients.values()), "steps T": first.x.shape[1],
            "features": ", ".join(data.feature_names) if len(data.feature_names) <= 8 else len(data.feature_names),
            "labels": "per step" if first.per_step else "per sequence",
            "class shares": ", ".join(f"{n} {100 * p:.1f}%" for n, p in zip(data.label_names, shares)),
        })
        ctx.step()
    ctx.table("pipelines", "Data of every pipeline (clients = subjects)", rows,
              ours="the data sources of this run", note="Thesis Table 5.3 (real WESAD, thesis pipeline): "
              "label 0 88.57 %, label 1 11.43 %.")
    if s.calibration and ctx.data.synthetic("wesad") and any(p == "thesis" for _, p in s.pipelines):
        _calibration(ctx, dict(ctx.data.options.get("wesad", {})))


THESIS_TABLE_5_1 = {
    "pEDA": {"min": -4.4867, "max": 5.8884, "mean": -0.0140, "var": 0.9325},
    "tEDA": {"min": 0.1639, "max": 9.6628, "mean": 1.8536, "var": 4.3981},
    "HR": {"min": 0.4868, "max": 192.0, "mean": 77.7142, "var": 770.1333},
    "HRV": {"min": 12.9829, "max": 386.3441, "mean": 45.8408, "var": 3245.0130},
}
"""Thesis Table 5.1: statistics of the extracted features (HRV window 25×64) over the 15 real
subjects — the description the wrist model is calibrated to (never the result tables)."""
THESIS_STRESS_SHARE = 0.1147
"""Thesis Table 5.1 caption: 11.47 % of the samples are labelled stress."""


def calibration_statistics(subjects: Iterable[str], *, minutes: float, seed: int = 0, hrv_window_s: float = 25) -> dict:
    """``{"features": {name: {"min", "max", "mean", "var"}}, "stress_share", "steps_per_subject"}`` of
    wrist-only synthetic subjects' defined steps: the numbers to put beside :data:`THESIS_TABLE_5_1`."""
    from tff_esn.data.seed_sources.synthetic_wesad import generate_subject
    from tff_esn.data.seed_sources.wesad import THESIS_FEATURES, wrist_features

    rows, codes = [], []
    for s in subjects:
        x, c = wrist_features(generate_subject(s, minutes=minutes, seed=seed, devices=("wrist",)), hrv_window_s,
                              source=f"synthetic {s}")
        rows.append(x)
        codes.append(c)
    x, c = np.concatenate(rows), np.concatenate(codes)
    x = x[np.all(np.isfinite(x), axis=1)]
    stats = {name: {"min": float(x[:, i].min()), "max": float(x[:, i].max()), "mean": float(x[:, i].mean()),
                    "var": float(x[:, i].var())} for i, name in enumerate(THESIS_FEATURES)}
    return {"features": stats, "stress_share": float(np.mean(c == 2)),
            "steps_per_subject": float(np.mean([len(r) for r in rows]))}

def _calibration(ctx: Context, options: dict) -> None:
    """Table 5.1 of the synthetic wesad beside the thesis' (the generator's calibration)."""
    from tff_esn.data.seed_sources.synthetic_wesad import REAL_MINUTES
    from tff_esn.data.seed_sources.wesad import SUBJECTS

    minutes = float(options.get("minutes", REAL_MINUTES))
    ours = calibration_statistics(options.get("subjects", SUBJECTS), minutes=minutes, seed=int(options.get("seed", 0)))
    rows = []
    for name, published in THESIS_TABLE_5_1.items():
        for stat, ref in published.items():
            value = ours["features"][name][stat]
            rows.append({"feature": name, "statistic": stat, "ours": value, "thesis Table 5.1": ref,
                         "ours / thesis": value / ref})
    rows.append({"feature": "label", "statistic": "stress share", "ours": ours["stress_share"],
                 "thesis Table 5.1": THESIS_STRESS_SHARE, "ours / thesis": ours["stress_share"] / THESIS_STRESS_SHARE})
    rows.append({"feature": "steps", "statistic": "per subject", "ours": ours["steps_per_subject"],
                 "thesis Table 5.1": 6000.0, "ours / thesis": ours["steps_per_subject"] / 6000.0})
    ctx.table("wesad_calibration", "What the synthetic WESAD wrist model is calibrated to: thesis Table 5.1 "
              "(extracted features, HRV window 25×64, all subjects), class shares, steps per subject", rows,
              ours=f"synthetic WESAD, {minutes:g}-minute wrist-only subjects", published="real WESAD, thesis §5.2",
              note="Calibrated to the data description (not to any result table): min/mean/var within a factor "
              "of 2, except the minima of HR (0.49 bpm: a ~2-minute gap between detected beats) and HRV (13 ms), "
              "single artefacts of the real recordings; pEDA's mean is ≈ 0 on both sides (high-pass part of the "
              "EDA). Maxima are not calibrated.")
    _normalisation_figure(ctx, minutes, int(options.get("seed", 0)))


def _normalisation_figure(ctx: Context, minutes: float, seed: int, subject: str = "S2") -> None:
    """One subject's four features raw, after the literal moving-average normalisation of §5.2
    (÷ a 25 s average) and after the default (− a 25×64-step average), stress shaded: the
    literal reading leaves nothing of the stress levels."""
    from tff_esn.data.seed_sources import wesad
    from tff_esn.data.seed_sources.synthetic_wesad import generate_subject

    x, codes = wesad.wrist_features(generate_subject(subject, minutes=minutes, seed=seed, devices=("wrist",)), 25)
    variants = {"extracted (Table 5.1)": (x, codes == wesad.STRESS_CODE)}
    for label, steps, mode in (("÷ MA 25 s (literal §5.2)", 25, "divide"),
                               (f"− MA {wesad.THESIS_MA_WINDOW_S:g} s (default)", int(wesad.THESIS_MA_WINDOW_S),
                                wesad.THESIS_MA_MODE)):
        variants[label] = wesad.normalise_thesis_features(x, codes, ma_steps=steps, ma_mode=mode)
    pyplot = plt()
    fig, axes = pyplot.subplots(len(variants), 4, figsize=(16, 2.4 * len(variants)), sharex=True, squeeze=False)
    for row, (label, (values, stress)) in enumerate(variants.items()):
        t = np.arange(len(values)) / 60.0
        for col, name in enumerate(wesad.THESIS_FEATURES):
            ax = axes[row][col]
            v = np.asarray(values[:, col], dtype=np.float64)
            lo, hi = np.nanpercentile(v, [0.5, 99.5])
            ax.plot(t, v, lw=0.5, color="C0")
            ax.fill_between(t, lo, hi, where=np.asarray(stress, bool), color="C3", alpha=0.15, lw=0)
            ax.set_ylim(lo, hi)
            ax.set(title=f"{name} — {label}", xlabel="minutes" if row == len(variants) - 1 else "")
    fig.suptitle(f"Synthetic WESAD {subject}: thesis features through the pipeline (stress shaded)", fontsize=9)
    fig.tight_layout()
    ctx.figure("wesad_normalisation", f"Synthetic {subject}: the thesis features raw, after the literal ÷ 25 s "
               "moving average and after the default − 25×64-step moving average (stress shaded)", fig)


register(Experiment(
    name="data-summary", group="data", title="Data sources and pipelines (generated first when missing)",
    reproduces="thesis Table 5.3 (label shares), the papers' data descriptions", run=run,
    settings={"tiny": Settings(pipelines=(("wesad", "incfed-wesad"),)), "quick": Settings(), "full": Settings()},
    data=("wesad", "hhar"),
))
