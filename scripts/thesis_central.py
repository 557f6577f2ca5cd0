"""Thesis Table 6.3: the centralized ESN on the design set (DS) and the test set (TS).

Thesis §6.1: Table 6.2's model (200 units, ρ 0.99, α 1.0, Adam η 0.1, batch 20, one
epoch, class weights 12/88) re-trained on the design set (10 training + 4 validation
subjects) of the thesis pipeline and assessed on the design and test sets with accuracy,
AUC and F1 (micro). Runs the registry's ``thesis-central`` algorithm with its defaults
(Table 6.2), once per repetition (seed ``seed + r``).
"""

from __future__ import annotations

import dataclasses

from scripts import published as pub
from scripts.common import mean_std, rep_seeds
from scripts.framework import Context, Experiment, register

METRICS = (("accuracy", "Accuracy"), ("auc", "AUC"), ("f1_micro", "F1 (micro)"))


@dataclasses.dataclass(frozen=True)
class Settings:
    repetitions: int = 3
    units: int = pub.THESIS_TABLE_6_2["units"]

    @property
    def steps(self) -> int:
        return self.repetitions


def run(ctx: Context, s: Settings) -> None:
    dataset = ctx.dataset("wesad", "thesis")
    split = ctx.split("thesis-primal", dataset)
    records = []
    for seed in rep_seeds(ctx, s.repetitions):
        records.append(ctx.run("thesis-central", dataset, split, f"central-{seed}", units=s.units, seed=seed))
        ctx.step(seed=seed)
    sections = {"design": [r["extra"]["design"] for r in records], "test": [r["test"] for r in records]}
    rows = []
    for key, name in METRICS:
        row = {"metric": name}
        for part, label in (("design", "DS"), ("test", "TS")):
            row[f"{label} (ours)"] = mean_std(r[key] for r in sections[part])
            row[f"{label} (published)"] = pub.THESIS_TABLE_6_3[part][key]
        rows.append(row)
    ctx.table("table_6_3", f"Thesis Table 6.3: centralized ESN, mean ± std over {s.repetitions} repetition(s)", rows,
              ours=ctx.on("wesad") + ", thesis pipeline", published="real WESAD, thesis Table 6.3",
              note=f"Model of Table 6.2 with {s.units} units; design set = training + validation subjects.")
    same = [abs(r["test"]["accuracy"] - r["test"]["f1_micro"]) for r in records]
    ctx.claim("For the binary task the centralized model's accuracy and F1 (micro) are the same",
              "thesis §6.2 (Tables 6.3–6.4)", max(same) < 1e-12,
              f"max |accuracy − F1 micro| on the test set: {max(same):.1e}")
    ds = mean_std(r["accuracy"] for r in sections["design"]).mean
    ts = mean_std(r["accuracy"] for r in sections["test"]).mean
    ctx.claim("The centralized ESN generalizes to the held-out test subject (TS accuracy close to DS accuracy)",
              "thesis Table 6.3 (DS 0.8986, TS 0.9018)", abs(ds - ts) <= 0.05,
              f"DS accuracy {ds:.4f}, TS accuracy {ts:.4f} (criterion: |DS − TS| ≤ 0.05)")


register(Experiment(
    name="thesis-central", group="thesis", title="Thesis: centralized ESN (stress vs not, thesis pipeline)",
    reproduces="thesis Table 6.3", run=run,
    settings={"tiny": Settings(repetitions=1, units=20), "quick": Settings(), "full": Settings(repetitions=5)},
))
