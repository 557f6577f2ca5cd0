"""The forecasting scoreboard's baselines and a quick run of the bench (bench/forecasting_scoreboard.py)."""

import numpy as np

from bench.forecasting_scoreboard import persistence_errors


def test_persistence_one_step_predicts_each_value_by_the_one_before():
    y = np.array([0.0, 1.0, 3.0, 6.0, 10.0, 15.0])
    np.testing.assert_array_equal(persistence_errors(y, 0, 2), [-2.0, -3.0, -4.0, -5.0])


def test_persistence_free_run_holds_the_last_value_seen_over_each_window():
    y = np.arange(20.0)
    errors = persistence_errors(y, 3, 5)
    assert errors.shape == (5, 3)  # warm-ups 18, 15, 12, 9, 6
    np.testing.assert_array_equal(errors, np.tile([-1.0, -2.0, -3.0], (5, 1)))
