"""The transcribed published numbers appear, row by row, in the seed documents they come from.

The checks read ``tests/seed_excerpts/``: the seed documents' table rows, captions and the
sentences quoted below, copied line for line (``grep`` of table rows, ``25% …`` rows and
those captions), so they run on a clean clone; where the seeds themselves lie beside the
repository (``../shared/seeds``), every excerpt line is also checked to be verbatim in them.
"""

import re
from pathlib import Path

import pytest

from scripts import published as pub

EXCERPTS = Path(__file__).resolve().parent / "seed_excerpts"
SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
THESIS, INCFED, PFEDRR, FEDIP = "003_c2e74226a179ae56.txt", "000_0cf767fa66676497.txt", "002_2ea2189f24e0e40f.txt", \
    "004_6461082fa0218459.txt"


def seed(name: str) -> str:
    return " ".join((EXCERPTS / name).read_text().split())


@pytest.mark.parametrize("name", [THESIS, INCFED, PFEDRR, FEDIP])
def test_excerpts_are_verbatim_lines_of_the_seeds(name):
    if not (SEEDS / name).exists():
        pytest.skip(f"seed document {SEEDS / name} not beside the repository")
    lines = set((SEEDS / name).read_text().splitlines())
    excerpt = (EXCERPTS / name).read_text().splitlines()
    assert len(excerpt) >= 4 and all(line in lines for line in excerpt)


def test_thesis_tables_6_4_and_6_5_rows():
    text = seed(THESIS)
    first, second = text.index("Table 6.4: Overall"), text.index("Table 6.5: Overall")
    for table, block in ((pub.THESIS_TABLE_6_4, text[:first]), (pub.THESIS_TABLE_6_5, text[first:second])):
        for model, (train, test) in table.items():
            assert f"| {model} | - | - | {train:.4f} | {test:.4f} |" in block, model
    assert "| 0.8986/0.9018 | 0.8092/0.9419 | 0.8986/0.9018 |" in text
    assert "validation F1 score of 0.9106" in text and "Mean Absolute Error is 1.1410" in text


def test_thesis_table_b3_rows():
    text = seed(THESIS)
    for fraction, cells in pub.THESIS_TABLE_B_3.items():
        row = " | ".join(f"{m:.4f} ± {s:.2f}" for m, s in (cells[k] for k in ("IncFed", "Partial IncFed", "Random")))
        assert f"| {round(fraction * 100)}% | {row} |" in text


def test_incfed_tables_v_and_vi_rows():
    text = seed(INCFED)
    for table in (pub.INCFED_TABLE_V, pub.INCFED_TABLE_VI):
        for fraction, cells in table.items():
            def cell(m, s):
                return f"{m:.2f} ± {s:.2f}".replace("± 0.", "± .")
            parts = [f"{cells['random'][0]:.2f}", f"{cells['random'][1]:.2f}"]
            for model in ("centralized", "fedavg", "incfed"):
                parts += [cell(*cells[model][0]), cell(*cells[model][1])]
            row = " ".join(parts)
            plain = text.replace("<b>", "").replace("</b>", "")
            assert f"{round(fraction * 100)}% {row}" in plain.replace("\t", " "), row


def test_pfedrr_and_fedip_rows():
    text = seed(PFEDRR).replace("<b>", "").replace("</b>", "")
    for kind, rows in pub.PFEDRR_TABLE_1.items():
        for fraction, c in rows.items():
            row = " | ".join(f"{m:.2f} ± {s:.2f}" for m, s in (c["fedrr"], *c["i-pfedrr"], *c["r-pfedrr"]))
            assert f"| {round(fraction * 100)}% | {row} |" in " ".join(text.split(" ")), (kind, fraction)


def test_fedip_table_2_rows():
    rows = {line.split()[0]: line for line in (EXCERPTS / FEDIP).read_text().splitlines() if re.match(r"\d+% ", line)}
    for fraction in (0.25, 0.5, 0.75, 1.0):
        cells = [(float(m), float(s)) for m, s in re.findall(r"(\d+\.\d+)±\s?(\d+\.\d+)plus-or-minus",
                                                               rows[f"{round(fraction * 100)}%"])]
        want = [pub.FEDIP_TABLE_2[kind][fraction][model] for kind in ("wesad", "hhar") for model in ("incfed", "fedip")]
        assert cells == [tuple(c) for c in want], fraction
