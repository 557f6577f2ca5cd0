"""The forecasting scoreboard's baselines and a quick run of the bench (bench/forecasting_scoreboard.py)."""

import numpy as np
import pytest

from bench.forecasting_scoreboard import persistence_errors


def test_persistence_one_step_predicts_each_value_by_the_one_before():
    y = np.array([0.0, 1.0, 3.0, 6.0, 10.0, 15.0])
    np.testing.assert_array_equal(persistence_errors(y, 0, 2), [-2.0, -3.0, -4.0, -5.0])


def test_persistence_free_run_holds_the_last_value_seen_over_each_window():
    y = np.arange(20.0)
    errors = persistence_errors(y, 3, 5)
    assert errors.shape == (5, 3)  # warm-ups 18, 15, 12, 9, 6
    np.testing.assert_array_equal(errors, np.tile([-1.0, -2.0, -3.0], (5, 1)))


def test_the_quick_scoreboard_writes_its_table_and_figure(tmp_path):
    """``--quick`` on the Mackey–Glass protocol: every column, the target's verdict, the files."""
    import csv
    import importlib.util

    from bench.forecasting_scoreboard import main, protocols
    from tff_esn.common.tasks import Task
    from tff_esn.data.seed_sources.generators import series_dataset

    main(["--quick", "--tasks=mackey-glass", f"--out={tmp_path}"])
    rows = list(csv.DictReader((tmp_path / "forecasting_scoreboard.csv").open()))
    assert [(r["task"], r["metric"]) for r in rows] == [("mackey-glass", "free-run NRMSE"),
                                                          ("mackey-glass", "one-step NRMSE")]
    assert all(r["incfed = centralized"] == "yes" and r["seeds"] == "1" for r in rows)
    free = float(rows[0]["centralized per seed"])
    assert rows[0]["meets target"] == f"{'yes' if free <= 1e-2 else 'no'} (≤ 0.01 every seed)"
    assert free < float(rows[0]["persistence per seed"])
    has_reservoirpy = importlib.util.find_spec("reservoirpy") is not None
    assert (rows[0]["reservoirpy"] == "not run") != has_reservoirpy
    assert rows[0]["fedavg"] != "not run"
    p, = [p for p in protocols(True) if p.name == "mackey-glass"]
    y = series_dataset("mackey-glass", Task("forecast", 1), clients=p.clients, steps=p.train_steps,
                       held_steps=p.held_steps, seed=0).clients["c3"].y[0]  # the test client
    w = p.washout
    expected = np.sqrt(np.mean((y[w - 1:-1] - y[w:]) ** 2)) / y[w:].std()
    assert float(rows[1]["persistence per seed"]) == pytest.approx(expected, rel=1e-3)
    for suffix in ("png", "pdf", "svg", "caption.md"):
        assert (tmp_path / f"forecasting_free_runs.{suffix}").stat().st_size > 100
    assert "| mackey-glass | 100 | free-run NRMSE |" in (tmp_path / "forecasting_scoreboard.md").read_text()
    main(["--quick", "--render", f"--out={tmp_path}", f"--docs={tmp_path / 'docs'}"])  # redraws, runs nothing
    page = (tmp_path / "docs" / "forecasting-scoreboard.md").read_text()
    assert "| mackey-glass | 100 | free-run NRMSE |" in page and "assets/forecasting-scoreboard.png" in page
    assert "Not run yet: mackey-glass" not in page and "Not run yet: lorenz, narma10-100, narma10-500" in page
    assert (tmp_path / "docs" / "assets" / "forecasting-scoreboard.png").stat().st_size > 5_000
