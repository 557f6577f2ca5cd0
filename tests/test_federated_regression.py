"""FedAvg and FedCurv with a linear readout and the mean squared error: TFF's own weighted FedAvg of a
Keras linear model, the simulation bit for bit, convergence to least squares, runs on real tasks."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff
from hypothesis import HealthCheck, given, settings, strategies as st
from sklearn.linear_model import LinearRegression

from tff_esn import ReservoirConfig
from tff_esn.registry.algorithms import run_algorithm
from tff_esn.data.sequences import ClientSequences
from tff_esn.data.splits import get_split
from tff_esn.registry.algorithms import resolve_run
from tff_esn.federated import curvature, learning_process, sample_clients
from tff_esn.federated.client_work import log_likelihood
from tff_esn.federated.clients import CachedStates, ClientArrays, RoundArrays
from tff_esn.federated.configs import REAL_TARGETS, ThesisModelConfig
from tff_esn.federated.model import build_thesis_model, thesis_loss
from tff_esn.data.seed_sources.generators import series_dataset
from tff_esn.common.tasks import Task

UNITS = 6
IDS = ("a", "b", "c", "d")
ROUNDS = 4


def _clients(seed: int) -> dict[str, ClientSequences]:
    """Clients of per-sequence real targets: a noisy linear function of the last input step."""
    rng = np.random.default_rng(seed)
    out = {}
    for i, cid in enumerate(IDS):
        n = 5 + 3 * i
        x = rng.normal(size=(n, 7, 2)).astype(np.float32)
        out[cid] = ClientSequences(x, 0.7 * x[:, -1, 0] - 0.4 * x[:, -1, 1] + 0.1 * rng.normal(size=n) + 0.2 * i)
    return out


def _source(seed: int, optimizer: str = "sgd") -> tuple[ThesisModelConfig, CachedStates]:
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=seed), batch_size=4,
                              learning_rate=0.05, optimizer=optimizer, state_mode="last", class_weight=REAL_TARGETS)
    return model, CachedStates(_clients(seed), model, seed=seed, shuffle=True)


def _model_fn(model: ThesisModelConfig, source: CachedStates, keras: bool = False):
    spec = source.dataset(source.ids[0], 0).element_spec

    def ours():
        return tff.learning.models.from_keras_model(build_thesis_model(UNITS, model, readout_only=True),
                                                    loss=thesis_loss(model), input_spec=spec)

    def plain_keras():  # a Keras linear model of its own, with Keras' MeanSquaredError
        init = tf.keras.initializers.GlorotUniform(seed=model.reservoir.seed)
        net = tf.keras.Sequential([tf.keras.Input((UNITS,)), tf.keras.layers.Dense(1, kernel_initializer=init)])
        return tff.learning.models.from_keras_model(net, loss=tf.keras.losses.MeanSquaredError(), input_spec=spec)

    return plain_keras if keras else ours


def _rounds(process, data_fn, seed: int, curvature_of=lambda s: None, per_round: int = 3):
    state = process.initialize()
    out = []
    for r in range(ROUNDS):
        result = process.next(state, data_fn(sample_clients(IDS, per_round, seed, r), r))
        state = result.state
        out.append(([np.asarray(w) for w in process.get_model_weights(state).trainable], curvature_of(state),
                    float(result.metrics["client_work"]["train"]["loss"])))
    return out


def _assert_same(want, got):
    for r, ((w_a, uv_a, loss_a), (w_b, uv_b, loss_b)) in enumerate(zip(want, got, strict=True)):
        for a, b in zip(w_a, w_b, strict=True):
            np.testing.assert_array_equal(b, a, err_msg=f"round {r + 1} weights")
        if uv_a is not None:
            for a, b in zip(uv_a[0] + uv_a[1], uv_b[0] + uv_b[1], strict=True):
                np.testing.assert_array_equal(b, a, err_msg=f"round {r + 1} u/v")
        assert loss_b == loss_a, f"round {r + 1} loss"


@pytest.mark.parametrize("seed, optimizer, server_lr", [(0, "sgd", 1.0),
                                                        pytest.param(1, "adam", 0.1, marks=pytest.mark.slow)])
def test_mse_fedavg_and_zero_penalty_fedcurv_are_tffs_weighted_fedavg_of_a_keras_linear_model(seed, optimizer,
                                                                                              server_lr):
    model, source = _source(seed, optimizer)
    kwargs = dict(client_learning_rate=model.learning_rate, server_learning_rate=server_lr, optimizer=optimizer)
    opt = (tff.learning.optimizers.build_sgdm(model.learning_rate) if optimizer == "sgd"
           else tff.learning.optimizers.build_adam(model.learning_rate))
    reference = tff.learning.algorithms.build_weighted_fed_avg(
        _model_fn(model, source, keras=True), client_optimizer_fn=opt,
        server_optimizer_fn=tff.learning.optimizers.build_sgdm(learning_rate=server_lr),
        loop_implementation=tff.learning.LoopImplementation.DATASET_ITERATOR)
    want = _rounds(reference, source.datasets, seed)
    ours = _model_fn(model, source)
    _assert_same(want, _rounds(learning_process(ours, **kwargs), source.datasets, seed))
    zero = [(w, None, loss) for w, _, loss in
            _rounds(learning_process(ours, penalty=0.0, real=True, **kwargs), source.datasets, seed, curvature)]
    _assert_same(want, zero)
    for penalty in (None, 0.0):  # the simulation of both, bit for bit
        got = _rounds(learning_process(ours, runtime="sim", penalty=penalty, real=True, **kwargs), source.in_memory,
                      seed)
        _assert_same(want, got)
    assert not np.allclose(want[-1][0][0], want[0][0][0])  # the readout trained


def test_mse_fedcurv_is_simulated_bit_for_bit_and_its_fisher_is_the_squared_error_gradient():
    model, source = _source(2)
    ours = _model_fn(model, source)
    kwargs = dict(client_learning_rate=model.learning_rate, server_learning_rate=0.1, optimizer="sgd",
                  penalty=1e-2, real=True)
    want = _rounds(learning_process(ours, **kwargs), source.datasets, 2, curvature)
    got = _rounds(learning_process(ours, runtime="sim", **kwargs), source.in_memory, 2,
                  lambda s: (list(s["u"]), list(s["v"])))
    _assert_same(want, got)
    assert any(np.any(u != 0) for u in want[-1][1][0])
    predictions, targets = tf.constant([[0.5], [2.0]]), tf.constant([[1.0], [1.0]])
    assert float(log_likelihood(predictions, targets)) == pytest.approx(-0.5 * (0.25 + 1.0))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), n_clients=st.integers(1, 5))
def test_fedavg_of_one_gradient_step_per_round_converges_to_least_squares(seed, n_clients):
    """One full-batch SGD step per client and round, server lr 1: the weighted mean of the steps is the
    pooled gradient step, so FedAvg converges to scikit-learn's LinearRegression on the pooled data."""
    rng = np.random.default_rng(seed)
    w_true, b_true = rng.normal(size=(UNITS, 1)), rng.normal()
    sizes = rng.integers(20, 60, size=n_clients)
    xs = [rng.normal(size=(n, UNITS)).astype(np.float32) for n in sizes]
    ys = [(x @ w_true + b_true + 0.1 * rng.normal(size=(len(x), 1))).astype(np.float32) for x in xs]
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, seed=seed % 100), state_mode="last",
                              class_weight=REAL_TARGETS)
    spec = (tf.TensorSpec((None, UNITS), tf.float32), tf.TensorSpec((None, 1), tf.float32))

    def model_fn():
        return tff.learning.models.from_keras_model(build_thesis_model(UNITS, model, readout_only=True),
                                                    loss=thesis_loss(model), input_spec=spec)

    process = learning_process(model_fn, runtime="sim", client_learning_rate=0.2, optimizer="sgd", real=True)
    data = RoundArrays(tuple(ClientArrays(x, y, np.arange(len(x))[None], None) for x, y in zip(xs, ys)),
                       int(sizes.max()))
    state = process.initialize()
    for _ in range(300):
        state = process.next(state, data).state
    kernel, bias = process.get_model_weights(state).trainable
    pooled = LinearRegression().fit(np.concatenate(xs), np.concatenate(ys))
    np.testing.assert_allclose(kernel, pooled.coef_.T, atol=1e-4)
    np.testing.assert_allclose(bias, pooled.intercept_, atol=1e-4)


@pytest.fixture(scope="module")
def sine():
    return series_dataset("sine", Task("forecast", 1), clients=4, steps=120, seed=3)


@pytest.mark.parametrize("algorithm", ["fedavg", pytest.param("fedcurv", marks=pytest.mark.slow)])
def test_fedavg_and_fedcurv_forecast_with_regression_metrics_and_keep_the_best_validation_mse(sine, algorithm,
                                                                                              tmp_path):
    split = get_split("npz", sine)
    config = resolve_run(algorithm, sine, units=20, state_mode="all", washout=20, rounds=12, patience=0,
                        clients_per_round=2, backend="sim", out=str(tmp_path), progress=False,
                        **({"penalty": 1e-3} if algorithm == "fedcurv" else {})).config
    record = run_algorithm(resolve_run(algorithm, sine, config=config), sine, split)
    assert record["extra"]["class_weight"] == [] and set(record["test"]) == {"nrmse", "rmse", "mae", "r2", "n"}
    assert record["test"]["nrmse"] < record["baselines"]["training_mean"]["test"]["nrmse"]
    assert record["result_check"] == {"val": [], "test": []}
    selection = record["extra"]["selection"]["client_lr"]
    assert selection["grid"] == [1e-4, 1e-3, 1e-2] and "val_neg_mse" in selection
    rows = record["extra"]["rounds"]
    kept = record["extra"]["kept_round"]
    assert rows[kept - 1]["val_rmse"] == min(r["val_rmse"] for r in rows)
    assert record["val"]["rmse"] == pytest.approx(rows[kept - 1]["val_rmse"], rel=1e-12)


@pytest.mark.slow
def test_a_forecast_run_is_tffs_bit_for_bit_on_the_simulation(sine, tmp_path):
    split = get_split("npz", sine)
    records = [run_algorithm(resolve_run(
        "fedcurv", sine, units=12, state_mode="all", washout=20, rounds=3, clients_per_round=3, client_lr=0.01,
        penalty=1e-2, keep_best=False, patience=0, backend=backend, out=str(tmp_path / backend), progress=False),
        sine, split)
        for backend in ("tff", "sim")]
    tff_run, sim_run = records
    for group in ("val", "test"):
        assert sim_run[group] == tff_run[group]
    np.testing.assert_array_equal(sim_run["extra"]["weights"]["kernel"], tff_run["extra"]["weights"]["kernel"])
    assert [r["train_loss"] for r in sim_run["extra"]["rounds"]] == [r["train_loss"] for r in tff_run["extra"]["rounds"]]


def test_a_diverging_client_rate_is_reported_not_a_crash(sine, tmp_path):
    config = resolve_run("fedavg", sine, units=20, state_mode="all", washout=20, rounds=10, patience=0, keep_best=False,
                        client_lr=1.0, readout_inputs="raw", backend="sim", out=str(tmp_path), progress=False).config
    record = run_algorithm(resolve_run("fedavg", sine, config=config), sine, get_split("npz", sine))
    assert record["test"]["rmse"] != record["test"]["rmse"]  # NaN
    assert any("diverged" in w for w in record["warnings"])
