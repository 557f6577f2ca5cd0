"""The reproduction framework on stand-in experiments: skip/--force, failure isolation, "not run",
tables with published columns, figures, claims and the report (no TensorFlow work)."""

import dataclasses
import json

import pytest

from scripts import framework
from scripts.framework import DataSources, Experiment, MeanStd, ReproductionRequest
from scripts.runner import run_experiments


@dataclasses.dataclass(frozen=True)
class Tiny:
    value: float = 1.0

    @property
    def steps(self) -> int:
        return 2


CALLS = []


def _ok(ctx, s):
    CALLS.append(ctx.experiment.name)
    ctx.step()
    ctx.table("t", "A table", [{"x": 1, "ours": MeanStd.of([1.0, 3.0]), "published": (2.0, 0.5)}],
              ours=ctx.on("wesad"), published="real WESAD")
    pyplot = __import__("scripts.common", fromlist=["plt"]).plt()
    fig, ax = pyplot.subplots()
    ax.plot([0, 1], [0, s.value])
    ctx.figure("f", "A figure", fig)
    ctx.claim("ours equals two", "seed X", True, "mean 2.0")
    ctx.claim("ours exceeds three", "seed X", False, "mean 2.0")
    ctx.claim("ours exceeds one on real data", "seed Y", False, "mean 0.5", cause="data",
              reason="synthetic signals are weaker")
    ctx.claim("ours is explained when it holds", "seed Z", True, "mean 2.0", cause="defect", reason="ignored")
    ctx.step()


def _boom(ctx, s):
    CALLS.append(ctx.experiment.name)
    raise RuntimeError("exploded on purpose")


@pytest.fixture()
def fake_registry(monkeypatch):
    registry = {}
    for name, run, requires in (("ok-one", _ok, ()), ("boom", _boom, ()), ("needs-lib", _ok, ("no_such_module_x",)),
                                ("ok-two", _ok, ())):
        registry[name] = Experiment(name, "incfed", f"{name} title", "Table Z", run,
                                    {p: Tiny() for p in framework.PROFILES}, requires=requires)
    monkeypatch.setattr(framework, "experiments", lambda: dict(registry))
    CALLS.clear()
    return registry


def _request(tmp_path, **kw):
    return ReproductionRequest("incfed", "tiny", DataSources(), tmp_path / "out", progress=False, **kw)


def test_failure_is_isolated_and_reported(fake_registry, tmp_path):
    report, records = run_experiments(_request(tmp_path))
    status = {r["name"]: r["status"] for r in records}
    assert status == {"ok-one": "done", "boom": "failed", "needs-lib": "not run", "ok-two": "done"}
    assert CALLS == ["ok-one", "boom", "ok-two"]
    boom = json.loads((tmp_path / "out" / "boom" / "status.json").read_text())
    assert boom["reason"] == "RuntimeError: exploded on purpose"
    assert "Traceback" in (tmp_path / "out" / "boom" / "error.txt").read_text()
    text = report.read_text()
    assert "no_such_module_x is not available" in text
    assert "RuntimeError: exploded on purpose" in text
    for name in ("ok-one", "ok-two"):
        folder = tmp_path / "out" / name
        assert (folder / "t.csv").read_text().splitlines() == [
            "x,ours,ours (std),published,published (std)", "1,2.0,1.0,2.0,0.5"]
        assert "| 1 | 2.0000 ± 1.0000 | 2.0000 ± 0.5000 |" in (folder / "t.md").read_text()
        assert (folder / "f.png").read_bytes()[:4] == b"\x89PNG"
        assert f"![A figure]({name}/f.png)" in text
    agrees = text[text.index("### Agrees"):text.index("### Disagrees")]
    disagrees = text[text.index("### Disagrees"):text.index("### Undetermined")]
    assert agrees.count("ours equals two") == 2 and disagrees.count("ours exceeds three") == 2
    unexplained = disagrees[disagrees.index("#### Because of not yet explained"):]
    by_data = disagrees[disagrees.index("#### Because of the data differ"):disagrees.index("#### Because of the seed")]
    assert unexplained.count("ours exceeds three") == 2 and "(2)" in unexplained.splitlines()[0]
    assert by_data.count("ours exceeds one on real data") == 2 and by_data.count("*Why:* synthetic signals are weaker") == 2
    assert "ours is explained when it holds" in agrees and "ignored" not in text
    assert "synthetic WESAD" in text and "not a reproduction of the published numbers" in text


def test_rerun_skips_finished_unless_forced(fake_registry, tmp_path):
    run_experiments(_request(tmp_path))
    CALLS.clear()
    _, records = run_experiments(_request(tmp_path))
    assert CALLS == ["boom"]
    assert [r["name"] for r in records if r.get("skipped")] == ["ok-one", "ok-two"]
    CALLS.clear()
    _, records = run_experiments(_request(tmp_path, force=True))
    assert CALLS == ["ok-one", "boom", "ok-two"] and not any(r.get("skipped") for r in records)


def test_other_settings_rerun_a_finished_experiment(fake_registry, tmp_path):
    run_experiments(_request(tmp_path))
    CALLS.clear()
    run_experiments(_request(tmp_path, seed=3))
    assert CALLS == ["ok-one", "boom", "ok-two"]


def test_report_keeps_experiments_finished_by_an_earlier_invocation(fake_registry, tmp_path):
    run_experiments(_request(tmp_path))
    one = ReproductionRequest("ok-two", "tiny", DataSources(), tmp_path / "out", progress=False)
    report, records = run_experiments(one)
    assert [r["name"] for r in records] == ["ok-two"] and records[0]["skipped"]
    text = report.read_text()
    assert all(f"`{name}`" in text for name in ("ok-one", "boom", "needs-lib", "ok-two"))


def test_bad_requests_are_rejected_by_name(fake_registry, tmp_path):
    with pytest.raises(ValueError, match="profile"):
        ReproductionRequest("all", "medium", DataSources(), tmp_path)
    with pytest.raises(ValueError, match="reproduce target"):
        framework.select("table-42")
    with pytest.raises(ValueError, match="wesad source"):
        DataSources(wesad="hhar:/x")
    with pytest.raises(FileNotFoundError, match="--wesad-dir"):
        DataSources.from_dirs(wesad_dir=str(tmp_path / "missing"))
    real = DataSources.from_dirs(hhar_dir=str(tmp_path))
    assert real.hhar == f"hhar:{tmp_path.resolve()}" and not real.synthetic("hhar") and real.synthetic("wesad")
    assert real.describe("hhar") == f"real HHAR at {tmp_path.resolve()}"
    with pytest.raises(ValueError, match=r"IncFedConfig: unknown setting\(s\) \['no_such_flag'\]"):
        framework.run_config("incfed", no_such_flag=1)
    config = framework.run_config("fedavg", units=6, server_lr=0.1, reservoir="different", out=str(tmp_path))
    assert (config.model.reservoir.units, config.server_lr, config.reservoirs) == (6, 0.1, "different")


def test_registry_lists_every_published_group():
    names = set(framework.experiments())
    assert {"data-summary", "thesis-central", "thesis-tuning", "thesis-federated", "thesis-discriminative",
            "thesis-preliminary", "thesis-partial-incfed", "incfed-tables", "pfedrr-table", "fedip-table",
            "privacy", "forecasting"} == names
    assert [e.name for e in framework.select("pfedrr")] == ["pfedrr-table"]
    assert [e.name for e in framework.select("forecasting")] == ["forecasting"]
    assert framework.select("all")[0].name == "data-summary"


def test_a_cause_must_be_known_and_carry_a_reason():
    with pytest.raises(ValueError, match="Claim.cause"):
        framework.Claim("s", "r", "disagrees", "e", cause="weather", reason="x")
    with pytest.raises(ValueError, match="Claim.reason"):
        framework.Claim("s", "r", "disagrees", "e", cause="seed")


BACKENDS_SEEN = []


def _federation(ctx, s):
    """Records the backend its FedAvg config gets; its run record says the backend that ran."""
    CALLS.append(ctx.experiment.name)
    from tff_esn.federated.configs import resolve_backend

    record = ctx.cached("fedavg", lambda folder: {"extra": {"backend": resolve_backend(
        ctx.run_config("fedavg", folder).backend)}})
    BACKENDS_SEEN.append((ctx.experiment.name, ctx.run_config("fedavg", ctx.out).backend, record["extra"]["backend"]))
    ctx.step(2)


@pytest.fixture()
def federated_registry(monkeypatch):
    registry = {name: Experiment(name, "thesis", f"{name} title", "Table F", _federation,
                                 {p: Tiny() for p in framework.PROFILES}, federated=federated)
                for name, federated in (("fed", True), ("closed", False))}
    monkeypatch.setattr(framework, "experiments", lambda: dict(registry))
    CALLS.clear()
    BACKENDS_SEEN.clear()
    return registry


def test_the_backend_reaches_federated_experiments_is_recorded_and_part_of_a_run_identity(federated_registry,
                                                                                        tmp_path):
    def request(backend):
        return ReproductionRequest("thesis", "tiny", DataSources(), tmp_path / "out", progress=False, backend=backend)

    report, records = run_experiments(request("sim"))
    assert BACKENDS_SEEN == [("fed", "sim", "sim"), ("closed", "auto", "sim")]  # not injected: the config's default
    status = {r["name"]: r for r in records}
    assert status["fed"]["backend"] == "sim" and status["fed"]["backends"] == ["sim"]
    assert "backend" not in status["closed"] and status["closed"]["backends"] == ["sim"]
    text = report.read_text()
    assert "| data | backend | status |" in text and "| synthetic wesad | sim | done |" in text
    assert "Federated rounds ran on the sim backend (as the runs' metrics.json record)." in text
    CALLS.clear()
    _, records = run_experiments(request("sim"))
    assert CALLS == [] and all(r["skipped"] for r in records)
    _, records = run_experiments(request("tff"))  # another backend: the federated experiment runs again
    assert CALLS == ["fed"] and [r["name"] for r in records if r["skipped"]] == ["closed"]
    assert json.loads((tmp_path / "out" / "fed" / "status.json").read_text())["backends"] == ["tff"]
    CALLS.clear()
    _, records = run_experiments(request("auto"))  # auto resolves to the library's preferred backend: sim
    assert CALLS == ["fed"] and json.loads((tmp_path / "out" / "fed" / "status.json").read_text())["backends"] == ["sim"]
    with pytest.raises(ValueError, match=r"backend: expected one of \('auto', 'tff', 'sim'\), got 'numpy'"):
        request("numpy")


def test_auto_resolves_to_tff_with_secure_aggregation_else_to_the_preferred_backend(monkeypatch):
    from tff_esn.federated import configs

    assert configs.resolve_backend("auto") == configs.PREFERRED_BACKEND == "sim"
    monkeypatch.setattr(configs, "PREFERRED_BACKEND", "tff")
    assert configs.resolve_backend("auto") == "tff"
    monkeypatch.setattr(configs, "PREFERRED_BACKEND", "sim")
    assert configs.resolve_backend("auto", secure=True) == "tff"
    assert configs.resolve_backend("tff") == "tff"
    secure = framework.run_config("fedavg", backend="auto", dp_epsilon=1.0, secure_aggregation=True)
    assert configs._runs_tff(secure) and not configs._runs_tff(framework.run_config("fedavg", backend="auto"))
    assert not configs._runs_tff(framework.run_config("fedavg", backend="auto", dp_epsilon=1.0))  # DP runs on both


def test_the_experiments_with_federated_runs_take_the_backend():
    assert {n for n, e in framework.experiments().items() if e.federated} == {
        "thesis-federated", "thesis-discriminative", "thesis-preliminary", "incfed-tables", "fedip-table", "privacy"}


def test_the_discriminative_phase_compares_with_primal_runs_of_its_own_backend_only(tmp_path):
    from types import SimpleNamespace

    from scripts.thesis_discriminative import _primal_results

    primal = tmp_path / "thesis-federated"
    (primal / "runs" / "different" / "FedAvg-1.0").mkdir(parents=True)
    (primal / "runs" / "different" / "FedAvg-1.0" / "metrics.json").write_text(
        json.dumps({"test": {"f1_micro": 0.75, "auc": 0.5}}))
    (primal / "status.json").write_text(json.dumps({"status": "done", "profile": "tiny", "backend": "tff"}))
    found = {backend: _primal_results(SimpleNamespace(out=tmp_path / "thesis-discriminative", profile="tiny",
                                                      backend=backend)) for backend in ("tff", "auto", "sim")}
    assert found["tff"] == {("fedavg", 1.0): (0.75, 0.5)} and found["sim"] == found["auto"] == {}


@pytest.mark.parametrize("backend, closed_form", [("auto", "numpy"), ("sim", "numpy"), ("tff", "tff")])
def test_closed_form_runs_of_a_federated_experiment_take_the_requests_backend(federated_registry, tmp_path, backend,
                                                                             closed_form):
    from scripts.framework import Context

    request = ReproductionRequest("thesis", "tiny", DataSources(), tmp_path / "out", progress=False, backend=backend)
    for name, federated in (("fed", True), ("closed", False)):
        ctx = Context(federated_registry[name], tmp_path / name, "tiny", request.data, 0, None, backend=backend)
        # outside a federated experiment: the configs' defaults (IncFed's auto, FedIP's tff)
        assert ctx.run_config("incfed", tmp_path).backend == (closed_form if federated else "auto")
        assert ctx.run_config("fedip", tmp_path).backend == (closed_form if federated else "tff")
        assert ctx.run_config("incfed", tmp_path, backend="tff").backend == "tff"  # the run's own flag wins
