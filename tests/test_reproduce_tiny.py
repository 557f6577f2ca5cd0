"""``tff-esn reproduce all --profile tiny`` end to end on small synthetic data: every experiment
runs, every table/figure listed in the report exists, and a second run skips them all."""

import json
import re

import pytest

from scripts import framework
from scripts.framework import DataSources, ReproductionRequest
from scripts.runner import run_experiments
from tff_esn.cli import main

TINY_DATA = {"wesad": {"minutes": 2.0}, "hhar": {"minutes": 0.25}}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    cache = tmp_path_factory.mktemp("cache")
    request = ReproductionRequest("all", "tiny", DataSources(cache_dir=str(cache), options=TINY_DATA), out / "runs",
                                  progress=False)
    report, records = run_experiments(request)
    return request, report, records


def test_every_experiment_runs_and_is_reported(tiny_run):
    request, report, records = tiny_run
    assert {r["name"]: r["status"] for r in records} == {name: "done" for name in framework.experiments()}, \
        [(r["name"], r.get("reason")) for r in records if r["status"] != "done"]
    text = report.read_text()
    links = re.findall(r"\]\(([^)#]+\.(?:csv|md|png))\)", text)
    assert len(links) >= 30
    for link in links:
        assert (request.out / link).is_file(), link
    for record in records:
        assert f"`{record['name']}`" in text
        for table in record["tables"]:
            assert (request.out / record["name"] / table["csv"]).read_text().count("\n") >= 2
    for figure in ("figure_6_3", "figure_6_7", "figure_6_8", "figure_6_12", "figure_6_13", "figure_A_1",
                   "figure_A_10", "figure_1_wesad", "table_b3_curves", "table_b3_k_sweep"):
        assert any(f["name"] == figure for r in records for f in r["figures"]), figure
    assert "synthetic WESAD" in text and "not a reproduction of the published numbers" in text
    assert "| tensorflow-federated | 0.87.0 |" in text
    assert "IncFed is equivalent to the centralized ESN" in text[text.index("### Agrees"):text.index("### Disagrees")]


def test_published_columns_sit_beside_ours(tiny_run):
    request, _, _ = tiny_run
    table = (request.out / "incfed-tables" / "wesad_table_v.md").read_text()
    assert "| 100% | incfed ESN |" in table and "83.78 ± 0.06 |" in table and "77.92 ± 0.06 |" in table
    assert "Ours: synthetic WESAD" in table and "Published: real WESAD, IncFed paper Table V" in table
    b3 = (request.out / "thesis-partial-incfed" / "table_b3.csv").read_text().splitlines()
    assert b3[0].startswith("training users,k,IncFed (ours),IncFed (ours) (std),Partial IncFed (ours)")


def test_second_run_skips_finished_experiments(tiny_run):
    request, _, _ = tiny_run
    again = ReproductionRequest("incfed", "tiny", request.data, request.out, progress=False)
    report, records = run_experiments(again)
    assert [(r["name"], r["skipped"]) for r in records] == [("incfed-tables", True)]
    assert report == request.out / "report.md"
    status = json.loads((request.out / "incfed-tables" / "status.json").read_text())
    assert status["data_options"] == {"wesad": TINY_DATA["wesad"]}


def test_command_line(tiny_run, capsys):
    request, _, _ = tiny_run
    assert main(["reproduce", "table-9", "--out", str(request.out)]) == 2
    assert "reproduce target" in capsys.readouterr().err
    assert main(["reproduce", "all", "--wesad-dir", str(request.out / "nowhere"), "--out", str(request.out)]) == 2
    assert "--wesad-dir" in capsys.readouterr().err
