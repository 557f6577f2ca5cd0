"""The data every experiment uses: clients, sequences, shapes and class balance per pipeline.

Runs first in ``reproduce all``, so the synthetic data are generated (and every pipeline's
cache filled) before the experiments; the table is the analogue of thesis Table 5.1's
label shares for each pipeline.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scripts.framework import Context, Experiment, register


@dataclasses.dataclass(frozen=True)
class Settings:
    pipelines: tuple[tuple[str, str], ...] = (
        ("wesad", "thesis"), ("wesad", "incfed-wesad"), ("wesad", "pfedrr-wesad"), ("wesad", "fedip-wesad"),
        ("hhar", "incfed-hhar"), ("hhar", "pfedrr-hhar"), ("hhar", "fedip-hhar"),
    )

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


register(Experiment(
    name="data-summary", group="data", title="Data sources and pipelines (generated first when missing)",
    reproduces="thesis Table 5.3 (label shares), the papers' data descriptions", run=run,
    settings={"tiny": Settings(pipelines=(("wesad", "incfed-wesad"),)), "quick": Settings(), "full": Settings()},
    data=("wesad", "hhar"),
))
