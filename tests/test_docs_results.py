"""The docs' results snapshots: written from a run folder the reproduction framework leaves (stand-in
experiments, no TensorFlow work), with the run's provenance, its tables and its claims."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tff_esn
from scripts import docs_results, framework
from scripts.framework import DataSources, Experiment, MeanStd, ReproductionRequest
from scripts.runner import run_experiments
from tff_esn.common.io import write_json_atomic
from tff_esn.runs.provenance import source_commit

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Tiny:
    datasets: tuple[str, ...] = ("wesad", "hhar")


def _tables(ctx, s):
    ctx.table("table_v", "Table V: accuracy (%)", [{"model": "incfed", "ours": MeanStd.of([70.0, 72.0]),
                                                    "published": 77.92}], ours=ctx.on("wesad"), published="real WESAD")
    fig, ax = __import__("scripts.common", fromlist=["plt"]).plt().subplots()
    ax.plot([0, 1], [70, 72])
    ctx.figure("curves", "Table V as curves", fig)
    ctx.claim("IncFed equals the centralized ESN", "IncFed §IV-C", True, "max difference 0.0")
    ctx.claim("Accuracy grows with the clients", "IncFed §IV-C", False, "25%: 71, 100%: 70", cause="data",
              reason="the synthetic subjects do not differ")
    ctx.claim("FedAvg overfits", "IncFed §IV-C", None, "too few repetitions")
    ctx.claim("The readout is sparse", "IncFed §IV-D", False, "no zeros")


def _boom(ctx, s):
    raise RuntimeError("exploded on purpose")


@pytest.fixture()
def run_dir(monkeypatch, tmp_path):
    """A run folder of two stand-ins named like real experiments: one done, one failed; WESAD synthetic,
    HHAR a real copy."""
    registry = {name: Experiment(name, "incfed", f"{name} title", f"{name} tables", run,
                                 {p: Tiny() for p in framework.PROFILES})
                for name, run in (("incfed-tables", _tables), ("pfedrr-table", _boom))}
    monkeypatch.setattr(framework, "experiments", lambda: dict(registry))
    monkeypatch.setattr(docs_results, "experiments", lambda: dict(registry))
    (tmp_path / "hhar").mkdir()
    data = DataSources.from_dirs(hhar_dir=str(tmp_path / "hhar"))
    run_experiments(ReproductionRequest("incfed", "quick", data, tmp_path / "run", progress=False))
    return tmp_path / "run"


def test_snapshots_show_the_provenance_tables_and_claims_of_each_experiment(run_dir, tmp_path):
    written = docs_results.write_snapshots(run_dir, tmp_path / "results")
    assert [p.name for p in written] == ["incfed-tables.md", "pfedrr-table.md"]
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["incfed-tables.md", "pfedrr-table.md"]
    text = written[0].read_text()
    status = framework.read_status(run_dir / "incfed-tables")
    header = re.search(r"^\| `quick` \| 0 \| (.+) \| (.+) \| (.+) \| (.+) \| done \|$", text, re.MULTILINE)
    assert header is not None, text
    assert header.group(1) == "; ".join(status["data_descriptions"].values())
    assert "synthetic WESAD" in header.group(1) and "real HHAR" in header.group(1)
    assert header.group(2) == f"`{source_commit()}`"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", header.group(3))
    assert header.group(4).endswith(" s")
    assert (run_dir / "incfed-tables" / "table_v.md").read_text().rstrip() in text
    assert "| incfed | 71.0000 ± 1.0000 | 77.9200 |" in text
    assert "Our WESAD numbers come from tff_esn's synthetic generator" in text
    assert "\n\nSettings (profile `quick`): datasets=['wesad', 'hhar'].\n\n" in text
    assert "\n\nThe seeds' settings (`--profile full`): datasets=('wesad', 'hhar').\n\n" in text
    assert ("Figures of this run (PNG in the run folder's `incfed-tables/`, not copied here): "
            "Table V as curves (`curves.png`).") in text
    claims = text[text.index("**Published claims checked by this run** (agrees: 1, disagrees: 2, undetermined: 1;"):]
    lines = [line for line in claims.splitlines() if line.startswith("- ")]
    assert [line.split(":")[0] for line in lines] == [
        "- *agrees*", "- *disagrees* (because the data differ (synthetic here, real in the seed))",
        "- *disagrees* (not yet explained)", "- *undetermined*"]
    assert lines[1].endswith("— 25%: 71, 100%: 70 *Why:* the synthetic subjects do not differ")
    assert "**The readout is sparse** (IncFed §IV-D) — no zeros" in lines[2]
    failed = written[1].read_text()
    assert "| failed |" in failed and '!!! failure "This experiment did not finish in the run"' in failed
    assert "    failed: RuntimeError: exploded on purpose" in failed and "Published claims" not in failed


def test_a_run_without_a_recorded_commit_or_finish_time_says_so(run_dir, tmp_path):
    status = run_dir / "incfed-tables" / "status.json"
    record = framework.read_status(run_dir / "incfed-tables")
    del record["commit"], record["finished"]
    write_json_atomic(status, record)
    written = (run_dir / "report.md").read_text().splitlines()[2]
    stamp = re.search(r"Generated (\d{4}-\d\d-\d\d \d\d:\d\d)", written).group(1)
    text = docs_results.snapshot(run_dir, record)
    assert f"| not recorded | report written {stamp} |" in text
    (run_dir / "report.md").unlink()
    assert "| not recorded | not recorded |" in docs_results.snapshot(run_dir, record)


def test_the_writer_refuses_a_folder_without_a_run_and_a_run_missing_a_table(run_dir, tmp_path, capsys):
    assert docs_results.main([str(tmp_path / "empty"), "--out", str(tmp_path / "results")]) == 2
    assert "run `tff-esn reproduce all --out" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
    (run_dir / "incfed-tables" / "table_v.md").unlink()
    with pytest.raises(FileNotFoundError, match=r"table_v.md: listed by incfed-tables/status.json but missing"):
        docs_results.write_snapshots(run_dir, tmp_path / "results")


def test_the_writer_keeps_snapshots_of_experiments_the_run_does_not_hold(run_dir, tmp_path, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "privacy.md").write_text("an earlier run\n")
    shutil.rmtree(run_dir / "pfedrr-table")
    assert docs_results.main([str(run_dir), "--out", str(out)]) == 0
    assert (out / "privacy.md").read_text() == "an earlier run\n"
    assert sorted(p.name for p in out.iterdir()) == ["incfed-tables.md", "privacy.md"]
    assert "does not hold pfedrr-table" in capsys.readouterr().err


def test_status_records_the_commit_of_the_source_that_ran(run_dir):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("the tests do not run from a git checkout")
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    expected = head.stdout.strip() + ("-dirty" if dirty else "")
    assert framework.read_status(run_dir / "incfed-tables")["commit"] == expected


def test_no_commit_for_a_copy_that_is_not_the_top_of_a_git_checkout(monkeypatch, tmp_path):
    package = tmp_path / "repo" / "lib" / "tff_esn"
    package.mkdir(parents=True)
    monkeypatch.setattr(tff_esn, "__file__", str(package / "__init__.py"))
    assert source_commit() is None
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    assert source_commit() is None  # inside another checkout (a venv's site-packages in a repository)


def test_make_docs_results_writes_the_snapshots_from_the_reproduce_folder():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^docs-results: venv\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe is not None and recipe.group(1) == "$(PY) -m scripts.docs_results $(REPORT)"
    assert "\nREPORT ?= $(REPRO_OUT)\n" in makefile and "--out $(REPRO_OUT)" in makefile
