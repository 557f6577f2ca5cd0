"""The discriminative phase: a federation with fake clients and the discriminator as filter (thesis §6.1–6.2).

5 real and 5 fake (noisy-input) training clients, 5 sampled per round; per round the clients the filter
accepted against the truly real ones, and the mean absolute error of that count (thesis Fig. 6.13).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common import streams
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated import FedAvgConfig, run_federated
from tff_esn.federated.client_work import ClientFilter
from tff_esn.common.io import write_csv_atomic


def choose_fake_clients(train_ids: Sequence[str], n_fake: int, seed: int) -> tuple[str, ...]:
    """``n_fake`` of the training clients, drawn without replacement (seeded), in ``train_ids`` order."""
    if not (isinstance(n_fake, int) and 0 <= n_fake <= len(train_ids)):
        raise ValueError(f"fake_clients: expected an integer in [0, {len(train_ids)}] (the training clients), "
                         f"got {n_fake!r}.")
    picks = set(streams.DISCRIMINATOR_FAKES.generator(seed).choice(len(train_ids), size=n_fake, replace=False)
                .tolist())
    return tuple(cid for i, cid in enumerate(train_ids) if i in picks)


def acceptance_report(accepted: Sequence[int], real: Sequence[int], sampled: Sequence[int]) -> dict[str, Any]:
    """Per-round accepted vs truly real clients and the mean absolute error of the count (thesis Fig. 6.13).

    Returns:
        ``{"rounds": [{"round", "sampled", "real", "accepted", "error"}], "mae"}`` where
        ``error = accepted − real`` and ``mae = mean |error|``.
    """
    if not (len(accepted) == len(real) == len(sampled)) or not accepted:
        raise ValueError(f"acceptance_report: expected equal, non-empty per-round counts, got {len(accepted)} "
                         f"accepted, {len(real)} real, {len(sampled)} sampled.")
    rows = [{"round": r + 1, "sampled": int(s), "real": int(v), "accepted": int(a), "error": int(a) - int(v)}
            for r, (a, v, s) in enumerate(zip(accepted, real, sampled))]
    return {"rounds": rows, "mae": float(np.mean([abs(row["error"]) for row in rows]))}


def plot_acceptance(report: dict[str, Any], path: str | os.PathLike, *, scores: Sequence[float] | None = None,
                    score_name: str = "test F1", title: str = "") -> Path:
    """Figure 6.13: (top, optional) a score per round; (bottom) accepted (black) vs truly real (green) clients."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rounds"]
    rounds = [r["round"] for r in rows]
    panels = 2 if scores is not None else 1
    fig, axes = plt.subplots(panels, 1, figsize=(8, 2.6 * panels + 0.4), sharex=True, squeeze=False)
    if scores is not None:
        axes[0, 0].plot(rounds, scores, color="tab:blue")
        axes[0, 0].set_ylabel(score_name)
    ax = axes[-1, 0]
    ax.stackplot(rounds, [r["accepted"] for r in rows], colors=["black"], alpha=0.55, step="mid",
                 labels=["accepted by the discriminator"])
    ax.stackplot(rounds, [r["real"] for r in rows], colors=["tab:green"], alpha=0.55, step="mid",
                 labels=["truly real"])
    ax.set_xlabel("round")
    ax.set_ylabel("clients")
    ax.set_ylim(0, max(r["sampled"] for r in rows) + 0.5)
    ax.legend(loc="upper right", fontsize="small")
    ax.set_title(f"{title + ' — ' if title else ''}MAE of the valid-client count {report['mae']:.4f}")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def run_discriminative_phase(
    dataset: SequenceDataset,
    split: Split,
    config: FedAvgConfig,
    client_filter: ClientFilter | None,
    *,
    fake_clients: int = 5,
) -> dict[str, Any]:
    """FedAvg+Disc / FedCurv+Disc with fake clients (thesis §6.1–6.2, Alg. 3–4, Fig. 6.13).

    Args:
        dataset, split: the data and the ``thesis-discriminative`` split (10 training clients).
        config: the federated run (FedAvg or FedCurv, :func:`run_federated`); its ``noise_std``
            is the fake clients' input noise (thesis: 0.5); ``config.out`` gets
            ``rounds.csv`` etc. of :func:`run_federated`, plus ``acceptance.csv``,
            ``acceptance.png`` (Figure 6.13) and the trained model in ``model/``. When ``config.noisy_clients`` is set, those are the fakes;
            otherwise ``fake_clients`` training clients are drawn with ``config.seed``.
        client_filter: the filter (e.g. :func:`discriminator.filter.load_filter`), or
            ``None`` for the same federation without a discriminator.
        fake_clients: how many training clients are fake (thesis: 5 of 10).

    Returns:
        :func:`run_federated`'s result (its ``model`` saved to ``config.out``, not returned), with
        ``extra["discriminator"]`` = the
        :func:`acceptance_report` plus ``fake_clients`` (truly real = the sampled clients
        without input noise, ``clean_clients`` of the rounds). After ``resume`` the report
        covers the rounds run by this call.
    """
    if config.noise_std <= 0:
        raise ValueError(f"run_discriminative_phase: the fake clients need input noise; config.noise_std is "
                         f"{config.noise_std}.")
    fakes = (tuple(config.noisy_clients) if config.noisy_clients is not None
             else choose_fake_clients(split.train, fake_clients, config.seed))
    config = dataclasses.replace(config, noisy_clients=fakes)
    result = run_federated(dataset, split, config, client_filter=client_filter)
    model = result.pop("model").replace(
        provenance={"algorithm": f"{config.algorithm}+disc", "data": dataset.source, "split": split.name},
        metrics={g: result[g] for g in ("train", "val", "test")})
    if config.out is not None:
        model.save(Path(config.out) / "model")
    rows = result["extra"]["rounds"]
    report = acceptance_report([row["accepted_clients"] for row in rows], [row["clean_clients"] for row in rows],
                               [row["clients"] for row in rows])
    report["fake_clients"] = list(fakes)
    result["extra"]["discriminator"] = report
    if config.out is not None and rows:
        write_csv_atomic(Path(config.out) / "acceptance.csv", report["rounds"])
        plot_acceptance(report, Path(config.out) / "acceptance.png", scores=[row.get("test_f1_micro") for row in rows]
                        if all("test_f1_micro" in row for row in rows) else None,
                        title=f"{config.algorithm}-{config.server_lr:g}+Disc")
    return result
