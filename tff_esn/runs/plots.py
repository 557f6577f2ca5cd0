"""Pictures of a reservoir and a run, each from arrays: ready for a run folder's records or a saved model.

:func:`plot_reservoir` (adjacency and degree distribution of Ŵ), :func:`plot_spectrum` (Ŵ's eigenvalues
with the spectral-radius circle), :func:`plot_states` (x(t) of a few units), :func:`plot_forecast`
(prediction against truth), :func:`plot_learning_curve` (per-round metrics) and :func:`plot_confusion`
(counts of true against predicted class). Each returns a matplotlib figure; :func:`~tff_esn.runs.figures.save_figure`
writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tff_esn.runs.figures import COLOURS, legend_outside, metric_label, pyplot, reference_line, series_style


def plot_reservoir(recurrent: np.ndarray, title: str):
    """Ŵ's non-zero pattern (row: receiving unit, column: sending unit) and the in-/out-degree histograms."""
    plt = pyplot()
    w = np.asarray(recurrent)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.6), gridspec_kw={"width_ratios": (1, 1.3)})
    left.imshow(w != 0, cmap="Greys", vmin=0, vmax=1, interpolation="nearest", aspect="equal")
    left.set_xlabel("sending unit j")
    left.set_ylabel("receiving unit i")
    left.set_title(f"Ŵ non-zeros ({int(np.count_nonzero(w))} of {w.size})")
    nonzero = w != 0
    degrees = {"in-degree": nonzero.sum(axis=1), "out-degree": nonzero.sum(axis=0)}
    top = int(max(d.max() for d in degrees.values())) + 1
    edges = np.arange(top + 1) - 0.5
    for i, (name, values) in enumerate(degrees.items()):
        style = series_style(i)
        counts, _ = np.histogram(values, bins=edges)
        held = np.flatnonzero(counts)
        right.step(np.arange(top), counts, where="mid", color=style["color"], linestyle=("-", "--")[i], linewidth=1)
        right.plot(held, counts[held], linestyle="none", marker=style["marker"], color=style["color"],
                   markersize=(7, 4)[i], markerfacecolor=("none", style["color"])[i], label=name)
    right.set_xlabel("degree (links per unit)")
    right.set_ylabel("units (count)")
    right.set_title("degree distribution")
    right.legend(frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_spectrum(recurrent: np.ndarray, spectral_radius: float, title: str):
    """Ŵ's eigenvalues in the complex plane, the circle of radius ρ(Ŵ) (measured) and the unit circle."""
    plt = pyplot()
    eigenvalues = np.linalg.eigvals(np.asarray(recurrent, np.float64))
    measured = float(np.max(np.abs(eigenvalues))) if eigenvalues.size else 0.0
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    ax.scatter(eigenvalues.real, eigenvalues.imag, s=10, color=COLOURS[0], marker="o", label="eigenvalues of Ŵ",
               zorder=3)
    angle = np.linspace(0, 2 * np.pi, 361)
    ax.plot(measured * np.cos(angle), measured * np.sin(angle), color=COLOURS[3], linestyle="--",
            label=f"ρ(Ŵ) = {measured:.3g} (configured {spectral_radius:g})")
    ax.plot(np.cos(angle), np.sin(angle), color="#777777", linestyle=":", label="unit circle")
    ax.set_aspect("equal")
    ax.set_xlabel("Re λ")
    ax.set_ylabel("Im λ")
    ax.set_title(title)
    ax.axhline(0, color="#cccccc", linewidth=0.6, zorder=0)
    ax.axvline(0, color="#cccccc", linewidth=0.6, zorder=0)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False)
    fig.tight_layout()
    return fig


def plot_states(states: np.ndarray, title: str, units: Sequence[int] | None = None):
    """Reservoir states x_i(t) (steps, units) of ``units`` (default: the first six) over time."""
    plt = pyplot()
    states = np.asarray(states)
    chosen = list(units if units is not None else range(min(6, states.shape[1])))
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for i, unit in enumerate(chosen):
        style = series_style(i)
        ax.plot(states[:, unit], color=style["color"], marker=style["marker"], markevery=max(1, len(states) // 12),
                markersize=4, linewidth=1, label=f"unit {unit}")
    ax.set_xlabel("time step t")
    ax.set_ylabel("state x_i(t) (tanh units, in [−1, 1])")
    ax.set_title(title)
    legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_forecast(truth: np.ndarray, prediction: np.ndarray, title: str, *, reference: float | None = None):
    """Prediction against truth over the steps (``reference``: the training mean as a line)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    steps = np.arange(len(truth))
    ax.plot(steps, truth, color=COLOURS[7], linewidth=1.2, label="truth")
    ax.plot(steps, prediction, color=COLOURS[3], linestyle="--", marker="o", markevery=max(1, len(steps) // 15),
            markersize=4, linewidth=1.1, label="prediction")
    if reference is not None:
        reference_line(ax, reference, "training mean", 0)
    ax.set_xlabel("time step of the test sequence")
    ax.set_ylabel("target (data units)")
    ax.set_title(title)
    legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_learning_curve(rows: Sequence[Mapping[str, Any]], title: str,
                        metrics: Sequence[str] = ("val_f1_macro", "val_accuracy", "test_accuracy"),
                        reference: tuple[str, float] | None = None):
    """Per-round values of ``metrics`` (the columns of ``rounds.csv`` that are present), ``reference`` a line."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    rounds = [int(float(r["round"])) for r in rows]
    present = [m for m in metrics if any(r.get(m) not in (None, "") for r in rows)]
    for i, metric in enumerate(present):
        style = series_style(i)
        values = [float(r[metric]) if r.get(metric) not in (None, "") else np.nan for r in rows]
        ax.plot(rounds, values, color=style["color"], marker=style["marker"], markersize=4, linewidth=1,
                label=metric_label(metric.split("_", 1)[1], metric.split("_", 1)[0]))
    if reference is not None:
        reference_line(ax, reference[1], reference[0], 0)
    ax.set_xlabel("round")
    ax.set_ylabel("score")
    ax.set_title(title)
    legend_outside(ax)
    fig.tight_layout()
    return fig


def plot_confusion(matrix: np.ndarray, labels: Sequence[str], title: str):
    """Counts of true (rows) against predicted (columns) class, each cell written, rows' recall in the labels."""
    plt = pyplot()
    m = np.asarray(matrix, np.int64)
    fig, ax = plt.subplots(figsize=(1.2 + 0.6 * len(labels), 1.0 + 0.55 * len(labels)))
    image = ax.imshow(m, cmap="Blues")
    for (i, j), n in np.ndenumerate(m):
        ax.text(j, i, str(n), ha="center", va="center", color="white" if n > m.max() / 2 else "black", fontsize=8)
    recall = [m[i, i] / m[i].sum() if m[i].sum() else np.nan for i in range(len(labels))]
    ax.set_xticks(range(len(labels)), list(labels), rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), [f"{name} ({r:.0%})" for name, r in zip(labels, recall)])
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class (recall)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="sequences or steps (count)")
    fig.tight_layout()
    return fig


def plot_topologies(recurrent: Mapping[str, np.ndarray], title: str):
    """Per named Ŵ a column: its non-zero pattern above, its eigenvalues with the spectral-radius circle below."""
    plt = pyplot()
    fig, axes = plt.subplots(2, len(recurrent), figsize=(2.1 * len(recurrent), 4.6), squeeze=False)
    angle = np.linspace(0, 2 * np.pi, 181)
    for (name, w), (top, bottom) in zip(recurrent.items(), axes.T):
        w = np.asarray(w, np.float64)
        top.imshow(w != 0, cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        top.set_title(f"{name}\n{int(np.count_nonzero(w))} links")
        top.set_xticks([])
        top.set_yticks([])
        eigenvalues = np.linalg.eigvals(w)
        radius = float(np.abs(eigenvalues).max())
        bottom.scatter(eigenvalues.real, eigenvalues.imag, s=5, color=COLOURS[0], zorder=3)
        bottom.plot(radius * np.cos(angle), radius * np.sin(angle), color=COLOURS[3], linestyle="--", linewidth=1)
        bottom.plot(np.cos(angle), np.sin(angle), color="#777777", linestyle=":", linewidth=1)
        bottom.set_aspect("equal")
        bottom.set_xlim(-1.1, 1.1)
        bottom.set_ylim(-1.1, 1.1)
        bottom.set_title(f"ρ(Ŵ) = {radius:.2f}", fontsize=8)
        bottom.set_xlabel("Re λ")
    axes[0][0].set_ylabel("Ŵ non-zeros")
    axes[1][0].set_ylabel("Im λ")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
