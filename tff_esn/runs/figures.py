"""The house style of every figure a command writes: files, titles, colours, markers, reference lines.

:func:`save_figure` writes one figure as PDF, SVG and a 300-dpi PNG with a caption file beside it;
:func:`grouped_points` draws a categorical axis as dodged points with error bars (one colour-blind-safe
colour and marker per series, no joining lines), :func:`bars` draws bars from zero, :func:`reference_line`
a horizontal baseline (majority class, training mean, a pooled reference); :func:`dataset_title` names a
source for a title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common.io import atomic_write, write_text_atomic

FORMATS = ("pdf", "svg", "png")
PNG_DPI = 300
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
"""Okabe and Ito's palette, readable with every common colour-vision deficiency."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
"""One marker per series, so series at the same values stay told apart without colour."""
REFERENCE_STYLES = ((":", "#555555"), ("--", "#000000"), ("-.", "#999999"))
"""Line style and colour of the first, second and third reference line."""


def series_style(index: int) -> dict[str, Any]:
    """Colour and marker of the ``index``-th series (cycling; markers outlast the 8 colours)."""
    return {"color": COLOURS[index % len(COLOURS)], "marker": MARKERS[index % len(MARKERS)]}


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display), with the house fonts and sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
                         "svg.fonttype": "none", "pdf.fonttype": 42})
    return plt


def dataset_title(source: str) -> str:
    """A source's name for a title: ``npz:/d/digits.npz`` → ``digits (npz)``, ``ts:/d/BasicMotions`` →
    ``BasicMotions (UEA/UCR)``, ``synthetic-hhar`` → ``synthetic HHAR``, ``wesad:/d`` → ``WESAD``."""
    kind, _, arg = source.partition(":")
    if kind == "npz":
        return f"{Path(arg).stem} (npz)"
    if kind == "ts":
        return f"{Path(arg).name} (UEA/UCR)"
    if kind in ("wesad", "hhar"):
        return kind.upper()
    if kind.startswith("synthetic-"):
        return f"synthetic {kind[len('synthetic-'):].upper()}"
    return kind if not arg else f"{kind} {Path(arg).name}"


METRIC_NAMES = {"accuracy": "accuracy", "balanced_accuracy": "balanced accuracy", "f1_macro": "macro-F1",
                "auc": "AUC", "nrmse": "NRMSE", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}
"""How a metric of ``metrics.json`` is written in a label or caption."""
_UNITS = {"nrmse": " (RMSE / std of the target; lower is better)", "rmse": " (target units; lower is better)",
          "mae": " (target units; lower is better)", **dict.fromkeys(("accuracy", "balanced_accuracy", "f1_macro",
                                                                    "auc"), " (fraction)")}


def metric_label(metric: str, group: str = "test") -> str:
    """An axis label naming ``metric`` on ``group`` with its unit: ``test balanced accuracy (fraction)``."""
    return f"{group} {METRIC_NAMES.get(metric, metric)}{_UNITS.get(metric, '')}"


def reference_line(ax, value: float, label: str, index: int = 0, *, spread: float | None = None) -> None:
    """A horizontal reference at ``value`` (``spread``: a ± band), in the ``index``-th reference style."""
    if value is None or not np.isfinite(value):
        return
    style, colour = REFERENCE_STYLES[index % len(REFERENCE_STYLES)]
    ax.axhline(value, color=colour, linestyle=style, linewidth=1.2, label=label, zorder=1)
    if spread:
        ax.axhspan(value - spread, value + spread, color=colour, alpha=0.08, zorder=0)


def grouped_points(ax, categories: Sequence[str], series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                   *, width: float = 0.7) -> list[Any]:
    """Per series ``name → (means, stds)`` over ``categories``: points dodged within each category, ± std error
    bars, one colour and marker each, no line joining the categories; returns the error-bar containers."""
    x = np.arange(len(categories), dtype=np.float64)
    n = max(1, len(series))
    offsets = (np.arange(n) - (n - 1) / 2) * (width / n)
    drawn = []
    for i, (name, (means, stds)) in enumerate(series.items()):
        style = series_style(i)
        drawn.append(ax.errorbar(x + offsets[i], np.asarray(means, np.float64), yerr=np.asarray(stds, np.float64),
                                 linestyle="none", markersize=6, capsize=2.5, elinewidth=1, label=name,
                                 markeredgecolor="white", markeredgewidth=0.6, zorder=3, **style))
    ax.set_xticks(x, list(categories))
    for boundary in x[:-1] + 0.5:
        ax.axvline(boundary, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_xlim(-0.5, len(categories) - 0.5)
    return drawn


def bars(ax, labels: Sequence[str], means: Sequence[float], stds: Sequence[float], *,
         colours: Sequence[str] | None = None, hatches: Sequence[str] | None = None) -> Any:
    """Horizontal bars of ``means`` ± ``stds`` from zero (the axis is not truncated), one row per label."""
    y = np.arange(len(labels))
    drawn = ax.barh(y, np.nan_to_num(np.asarray(means, np.float64)), xerr=np.nan_to_num(np.asarray(stds, np.float64)),
                    color=colours or COLOURS[0], edgecolor="black", linewidth=0.5, capsize=2, zorder=2)
    for bar, hatch in zip(drawn, hatches or ()):
        bar.set_hatch(hatch)
    ax.set_yticks(y, list(labels))
    ax.invert_yaxis()
    ax.set_xlim(left=0.0)
    return drawn


def legend_outside(ax) -> None:
    """The legend right of ``ax``, outside the data."""
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


def save_figure(fig, path: str | Path, caption: str) -> dict[str, Path]:
    """Writes ``fig`` as ``STEM.pdf``, ``STEM.svg``, ``STEM.png`` (300 dpi) and ``caption`` as ``STEM.caption.md``
    (``path``'s suffix is dropped), each atomically; closes ``fig``; returns the paths by format."""
    plt = pyplot()
    stem = Path(path)
    stem = stem.with_suffix("") if stem.suffix in tuple(f".{f}" for f in FORMATS) else stem
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {}
    try:
        for fmt in FORMATS:
            paths[fmt] = stem.with_name(f"{stem.name}.{fmt}")
            with atomic_write(paths[fmt]) as fh:
                fig.savefig(fh, format=fmt, dpi=PNG_DPI if fmt == "png" else None, bbox_inches="tight",
                            metadata={"Date": None} if fmt in ("svg", "pdf") else None)
    finally:
        plt.close(fig)
    paths["caption"] = write_text_atomic(stem.with_name(f"{stem.name}.caption.md"), caption.strip() + "\n")
    return paths
