"""DP on the single-process backend equals TFF's DP path bit for bit: the release, and the rounds."""

import collections
import dataclasses
import math

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff
from hypothesis import given, settings, strategies as st

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated import curvature, learning_process, run_federated, sample_clients
from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig
from tff_esn.federated.model import ThesisModelConfig
from tff_esn.federated.simulated_aggregation import PrivateRelease, simulated
from tff_esn.federated.simulation import _graphs_as_tff_runs_them
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.learning import LearningPrivacy

from closed_form_data import THESIS_SPLIT, random_thesis_dataset
from test_federated_simulation import IDS, _model_fn, _source

ROUNDS = 4
SPECS = (tf.TensorSpec((3, 1), tf.float32), tf.TensorSpec((1,), tf.float32))
MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                          learning_rate=0.05)


def _leaves(nest):
    return [np.asarray(t) for t in tf.nest.flatten(nest)]


def _assert_bitwise(got, want, what):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), what
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b, err_msg=what)


def _as_tff_runs_it(function):
    """``function`` called as the simulated round calls its graph (Grappler's arithmetic rewrites off)."""
    def call(*args):
        with _graphs_as_tff_runs_them():
            return function(*args)

    return call


def _release_cases(kind, privacy):
    """TFF's aggregator, our release of the same query and the value's specs."""
    aggregation = privacy.aggregation(4, curvature=kind in ("joint update", "curvature"))
    if kind == "curvature":
        specs = collections.OrderedDict(u=SPECS, v=SPECS)
        return aggregation.curvature, PrivateRelease(aggregation.curvature_query), specs
    return aggregation.model, PrivateRelease(aggregation.model_query), SPECS


@pytest.mark.parametrize("kind", ["fixed", "adaptive", "joint update", "curvature"])
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), z=st.floats(0.1, 2.0), clip=st.floats(0.05, 2.0), clients=st.integers(1, 6),
       scale=st.floats(0.01, 3.0), data_seed=st.integers(0, 2**16))
def test_private_release_is_tffs_dp_aggregator_bitwise(kind, seed, z, clip, clients, scale, data_seed):
    """PrivateRelease on the query LearningPrivacy builds gives TFF's DifferentiallyPrivateFactory
    round bit for bit: the noised mean/sum, the query state (clip, noise seed) and the
    measurements, over rounds of clients some of whose values are clipped (the sum a fold
    from zero in the clients' order, as TFF's runtime takes it)."""
    privacy = LearningPrivacy(noise_multiplier=z, clip=clip, adaptive=kind == "adaptive", seed=seed)
    factory, release, specs = _release_cases(kind, privacy)
    process = factory.create(tff.types.tensorflow_to_type(specs))
    rng = np.random.default_rng(data_seed)
    tff_state, state, step = process.initialize(), release.initialize(), _as_tff_runs_it(tf.function(release.next))
    _assert_bitwise(state, tff_state.query_state, "initial state")
    for r in range(ROUNDS):
        values = [tf.nest.map_structure(lambda spec: (scale * rng.normal(size=spec.shape)).astype(np.float32), specs)
                  for _ in range(clients)]
        want = process.next(tff_state, values)
        result, state, measured = step(values, [tf.constant(1.0)] * clients, state)
        tff_state = want.state
        _assert_bitwise(result, want.result, f"round {r + 1} result")
        _assert_bitwise(state, tff_state.query_state, f"round {r + 1} query state")
        _assert_bitwise(measured, want.measurements, f"round {r + 1} measurements")
        assert list(measured["dp_query_metrics"]) == list(want.measurements["dp_query_metrics"])


def _rounds(process, data_fn, curvature_of):
    """Per round: trainable weights, (u, v) or None, the client-work and aggregator measurements."""
    state, out = process.initialize(), []
    for r in range(ROUNDS):
        result = process.next(state, data_fn(sample_clients(IDS, 3, 0, r), r))
        state = result.state
        out.append(([np.asarray(w) for w in process.get_model_weights(state).trainable], curvature_of(state),
                    result.metrics["client_work"], result.metrics["aggregator"]))
    return out


DP_CASES = [
    # algorithm, adaptive clip, client filter (the composed TFF process; without: build_unweighted_fed_avg)
    ("fedavg", False, False),
    ("fedavg", True, True),
    ("fedcurv", False, False),
]


@pytest.mark.parametrize("algorithm, adaptive, with_filter", DP_CASES)
def test_dp_simulation_equals_tff_round_by_round(algorithm, adaptive, with_filter):
    """Weights, u/v and the DP measurements (the adaptive clip) of both backends per round, bit
    for bit (2-class cached-state clients, as the plain rounds: tests/test_federated_simulation.py),
    the training metrics withheld by both, the accepted clients counted by both."""
    model, source = _source(0, False, "same", 2)
    model_fn = _model_fn(model, source, False)
    privacy = LearningPrivacy(noise_multiplier=0.7, clip=0.05, adaptive=adaptive, seed=3)
    fedcurv = algorithm == "fedcurv"
    kwargs = dict(client_learning_rate=model.learning_rate, server_learning_rate=1.0,
                  client_filter=(lambda kernel, bias: tf.reduce_sum(tf.abs(kernel)) < 1.0) if with_filter else None)
    if fedcurv:
        kwargs["penalty"] = 1e-2
    aggregation = privacy.aggregation(3, curvature=fedcurv)
    reference = learning_process(model_fn, aggregation=aggregation, **kwargs)
    simulated = learning_process(model_fn, aggregation=aggregation, runtime="sim", **kwargs)
    want = _rounds(reference, source.datasets, curvature if fedcurv else lambda s: None)
    got = _rounds(simulated, source.in_memory, (lambda s: (list(s["u"]), list(s["v"]))) if fedcurv else lambda s: None)
    for r, ((w_tff, uv_tff, work_tff, agg_tff), (w_sim, uv_sim, work_sim, agg_sim)) in enumerate(zip(want, got)):
        _assert_bitwise(w_sim, w_tff, f"round {r + 1} weights")
        if fedcurv:
            _assert_bitwise(uv_sim, uv_tff, f"round {r + 1} u/v")
            assert tf.nest.flatten(work_sim["curvature"]) == tf.nest.flatten(work_tff["curvature"]) == []
        assert dict(work_sim["train"]) == dict(work_tff["train"]) == {}
        assert work_sim["accepted_clients"] == work_tff.get("accepted_clients", 3) == 3
        assert list(agg_sim["dp_query_metrics"]) == list(agg_tff["dp_query_metrics"]) == (["clip"] if adaptive else [])
        _assert_bitwise(agg_sim, agg_tff, f"round {r + 1} DP measurements")
    if adaptive:
        assert want[-1][3]["dp_query_metrics"]["clip"] != pytest.approx(0.05, rel=1e-3)  # the clip moved
    if fedcurv:
        assert any(np.any(u != 0) for u in want[-1][1][0])
    assert not np.allclose(want[-1][0][0], want[0][0][0])


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


def _run(data, algorithm, **changes):
    """A 2-round DP run (z 0.8, clip 0.5) of ``algorithm`` with ``changes``."""
    config = dict(model=MODEL, rounds=2, clients_per_round=2, noise_std=0.0, progress=False,
                  privacy=PrivacyConfig(dp_noise_multiplier=0.8, dp_clip=0.5, dp_seed=5))
    cls = FedCurvConfig if algorithm == "fedcurv" else FedAvgConfig
    return run_federated(data, THESIS_SPLIT, cls(**{**config, **changes}))


def test_a_dp_run_on_both_backends_reports_the_same_privacy_and_model(data):
    """run_federated with DP: the same ε section, no training-loss column, the same readout to float32
    rounding (per-step outputs meet the worker's kernel differences: tff_esn.federated.simulation)
    and the backend recorded."""
    runs = {backend: _run(data, "fedcurv", backend=backend, penalty=1e-2) for backend in ("tff", "sim")}
    assert runs["sim"]["privacy"] == runs["tff"]["privacy"]
    assert math.isfinite(runs["sim"]["privacy"]["epsilon"]) and runs["sim"]["privacy"]["epsilon"] > 0
    assert [r["extra"]["backend"] for r in runs.values()] == ["tff", "sim"]
    for result in runs.values():
        assert not any("train_loss" in row for row in result["extra"]["rounds"])
    for key in ("kernel", "bias"):
        np.testing.assert_allclose(runs["sim"]["extra"]["weights"][key], runs["tff"]["extra"]["weights"][key],
                                   rtol=1e-5, atol=1e-6)


def test_a_resumed_dp_simulation_continues_the_noise_stream(data, tmp_path):
    """The DP query's state (adaptive clip, noise seeds) is part of the simulated state: an
    interrupted run resumes to the uninterrupted run's weights bit for bit."""
    adaptive = PrivacyConfig(dp_noise_multiplier=0.8, dp_clip=0.5, dp_seed=5, dp_adaptive_clip=True)
    whole = _run(data, "fedavg", backend="sim", privacy=adaptive, out=str(tmp_path / "whole"))
    _run(data, "fedavg", backend="sim", privacy=adaptive, rounds=1, out=str(tmp_path / "cut"))
    resumed = _run(data, "fedavg", backend="sim", privacy=adaptive, out=str(tmp_path / "cut"), resume=True)
    for key in ("kernel", "bias"):
        np.testing.assert_array_equal(resumed["extra"]["weights"][key], whole["extra"]["weights"][key])
    assert [r["round"] for r in resumed["extra"]["rounds"]] == [1, 2]  # the history before the cut kept


def test_simulated_aggregation_refuses_secure_aggregation_and_is_plain_without_dp():
    with pytest.raises(ValueError, match=r"'sim' has no secure aggregation .* --backend tff\."):  # the boundary
        FedAvgConfig(backend="sim", privacy=PrivacyConfig(dp_noise_multiplier=1.0, secure_aggregation=True))
    plain = LearningPrivacy().aggregation(3, curvature=True)
    mean, curvature_sum = simulated(plain)
    assert not plain.dp and plain.curvature_query is None and mean.initialize() == curvature_sum.initialize() == ()
    assert dataclasses.replace(FedCurvConfig(), backend="sim",
                               privacy=PrivacyConfig(dp_noise_multiplier=1.0)).backend == "sim"
