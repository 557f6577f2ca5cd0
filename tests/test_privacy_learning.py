"""TFF's secure and DP aggregators in FedAvg/FedCurv (model_aggregator) and their ε."""

import dataclasses

import numpy as np
import pytest

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.model import ThesisModelConfig
from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig
from tff_esn.federated.training import run_federated
from tff_esn.privacy import accounting
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.learning import LearningPrivacy

from closed_form_data import THESIS_SPLIT, random_thesis_dataset

MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                          learning_rate=0.05)
BASE = FedAvgConfig(model=MODEL, rounds=2, clients_per_round=2, noise_std=0.0, progress=False)


def _private(config, **flags):
    """``config`` with the privacy flags ``flags`` (``dp_noise_multiplier``, ``dp_clip``, ...)."""
    return dataclasses.replace(config, privacy=PrivacyConfig(**flags))


def _fedcurv(**changes):
    """BASE as a FedCurv run."""
    return FedCurvConfig(**{**{f.name: getattr(BASE, f.name) for f in dataclasses.fields(BASE)}, **changes})


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


@pytest.fixture(scope="module")
def plain(data):
    return run_federated(data, THESIS_SPLIT, BASE)


def _kernel(result):
    weights = result["extra"]["weights"]
    return np.concatenate([np.ravel(weights["kernel"]), np.ravel(weights["bias"])])


def test_secure_fedavg_equals_plain_fedavg(data, plain):
    """tff.learning.secure_aggregator: 32-bit quantization of updates whose norm stays below its clip."""
    secure = run_federated(data, THESIS_SPLIT, _private(BASE, secure_aggregation=True))
    np.testing.assert_allclose(_kernel(secure), _kernel(plain), atol=1e-5)
    assert secure["secure_aggregation"]["enabled"] and plain["secure_aggregation"] == {"enabled": False}
    assert plain["privacy"]["mechanism"] == "none"


@pytest.mark.parametrize("privacy", [
    dict(dp_noise_multiplier=0.8, dp_clip=0.5),
    pytest.param(dict(dp_noise_multiplier=0.8, dp_clip=0.5, secure_aggregation=True), marks=pytest.mark.slow)])
def test_dp_fedavg_reports_the_accountants_epsilon(data, plain, privacy):
    result = run_federated(data, THESIS_SPLIT, _private(BASE, **privacy))
    section = result["privacy"]
    q = 2 / len(THESIS_SPLIT.train)
    assert section["sampling_rate"] == q and section["rounds"] == 2 and section["clip"] == 0.5
    assert section["epsilon"] == pytest.approx(accounting.epsilon(0.8, 1e-5, rounds=2, sampling_rate=q))
    assert "gaussian_fixed" in section["mechanism"]
    assert not np.allclose(_kernel(result), _kernel(plain), atol=1e-3)  # noise of std z·C/m moved the model


def test_dp_fedavg_noise_is_seeded(data, plain):
    """Same --dp-seed, same numbers (TFF's own GaussianSumQuery draws unseeded noise)."""
    def run(seed):
        return _kernel(run_federated(data, THESIS_SPLIT, _private(BASE, dp_noise_multiplier=0.8, dp_clip=0.5,
                                                                  dp_seed=seed)))

    first, again, other = run(7), run(7), run(8)
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other, atol=1e-3) and not np.allclose(first, _kernel(plain), atol=1e-3)


def test_seeded_query_noise_has_the_configured_scale():
    """SeededGaussianSumQuery: clipping as tfp.GaussianSumQuery, noise std = stddev, fresh each release."""
    import tensorflow_privacy as tfp

    from tff_esn.privacy.learning import SeededGaussianSumQuery

    query, reference = SeededGaussianSumQuery(1.0, 0.5, seed=3), tfp.GaussianSumQuery(1.0, 0.5)
    record = [np.full(3, 2.0, np.float32), np.full(2, -1.0, np.float32)]
    state = query.initial_global_state()
    for got, want in zip(query.preprocess_record(query.derive_sample_params(state), record),
                         reference.preprocess_record(1.0, record)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    zeros = [np.zeros(20000, np.float32), np.zeros(5, np.float32)]
    first, state1, event = query.get_noised_result(zeros, state)
    second, _, _ = query.get_noised_result(zeros, state1)
    again, _, _ = query.get_noised_result(zeros, state)
    np.testing.assert_array_equal(first[0], again[0])  # same state, same draw
    assert abs(np.corrcoef(first[0], second[0])[0, 1]) < 0.05  # the next release draws fresh noise
    # std of 20000 N(0, 0.25) draws: relative standard error 1/√(2·20000) ≈ 0.5 %; 4 % is > 7 SE
    assert np.std(first[0]) == pytest.approx(0.5, rel=0.04) and abs(np.mean(first[0])) < 0.02
    assert float(event.noise_multiplier) == pytest.approx(0.5)


def test_dp_fedavg_adaptive_clip_noise_is_seeded(data, plain):
    """Adaptive clipping too: same --dp-seed, same numbers; another seed, other numbers."""
    def run(seed):
        return run_federated(data, THESIS_SPLIT, _private(BASE, dp_noise_multiplier=0.8, dp_clip=0.5,
                                                          dp_adaptive_clip=True, dp_seed=seed))

    first, again, other = run(7), run(7), run(8)
    np.testing.assert_array_equal(_kernel(first), _kernel(again))
    assert not np.allclose(_kernel(first), _kernel(other), atol=1e-3)
    assert not np.allclose(_kernel(first), _kernel(plain), atol=1e-3)
    section = first["privacy"]
    assert "gaussian_adaptive" in section["mechanism"] and section["noise_seeded"] is True
    assert section["noise_seed"] == 7


def _without_seeds(state):
    """A TFF/tfp state as plain nested values, minus the seed pairs only our queries carry."""
    if hasattr(state, "_asdict"):
        return {k: _without_seeds(v) for k, v in state._asdict().items() if k != "seed"}
    if isinstance(state, (list, tuple)):
        return [_without_seeds(v) for v in state]
    return state


def _adaptive_factories(noise_multiplier, clipped_count_stddev, seed=5):
    import tensorflow_federated as tff

    from tff_esn.privacy.learning import seeded_adaptive_query

    kwargs = dict(initial_l2_norm_clip=0.1, clipped_count_stddev=clipped_count_stddev)
    return (tff.aggregators.DifferentiallyPrivateFactory(seeded_adaptive_query(noise_multiplier, 4, seed, **kwargs)),
            tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(noise_multiplier, 4, **kwargs))


def test_seeded_adaptive_factory_matches_tffs_gaussian_adaptive():
    """Same parameters (noise multipliers, clipped-count std, DP event = accounting) as TFF's
    gaussian_adaptive; without noise, the same clip trajectory and means on the same updates."""
    import tensorflow_federated as tff

    from tff_esn import runtime

    runtime.ensure_context()
    value_type = tff.TensorType(np.float32, [5])
    ours, theirs = (f.create(value_type) for f in _adaptive_factories(1.0, 1.0))
    assert _without_seeds(ours.initialize()) == _without_seeds(theirs.initialize())

    ours, theirs = (f.create(value_type) for f in _adaptive_factories(0.0, 0.0))
    state_ours, state_theirs = ours.initialize(), theirs.initialize()
    rng = np.random.default_rng(2)
    clips = []
    for scale in (0.02, 0.05, 0.3, 0.3):  # norms below, then above the clip: it shrinks, then grows
        updates = [(rng.normal(size=5) * scale).astype(np.float32) for _ in range(4)]
        out_ours, out_theirs = ours.next(state_ours, updates), theirs.next(state_theirs, updates)
        np.testing.assert_allclose(out_ours.result, out_theirs.result, rtol=1e-6, atol=1e-8)
        clip = out_ours.measurements["dp_query_metrics"]["clip"]
        assert clip == pytest.approx(out_theirs.measurements["dp_query_metrics"]["clip"], rel=1e-6)
        clips.append(clip)
        state_ours, state_theirs = out_ours.state, out_theirs.state
    np.testing.assert_array_equal(np.sign(np.diff([0.1] + clips)), [-1, -1, 1, 1])  # the clip moved both ways


def test_seeded_adaptive_query_noise_has_the_configured_scale():
    """Sum noise std z_v·C_t; clipped-count noise std σ_b, read back from the clip's geometric
    update C_{t+1} = C_t·exp(−η(0.5 + n_t/m − ½)) with exactly half the records below C_t."""
    import tensorflow_privacy as tfp

    from tff_esn.privacy.learning import SeededQuantileAdaptiveClipSumQuery

    args = dict(initial_l2_norm_clip=1.0, noise_multiplier=0.5, target_unclipped_quantile=0.5, learning_rate=0.2,
                clipped_count_stddev=2.0, expected_num_records=100.0, geometric_update=True)
    query = SeededQuantileAdaptiveClipSumQuery(seed=3, **args)
    sample = query.initial_sample_state(np.zeros(2000, np.float32))  # zero sum, count of (below − ½) = 0
    state, clips, sums = query.initial_global_state(), [], []
    for _ in range(1000):
        clips.append(float(state.sum_state.l2_norm_clip))
        noised, state, event = query.get_noised_result(sample, state)
        sums.append(noised.numpy() / clips[-1])
    clips.append(float(state.sum_state.l2_norm_clip))
    counts = -100.0 * np.diff(np.log(clips)) / 0.2
    # 2·10⁶ sum draws (relative SE 0.05 %) and 1000 count draws (relative SE 2.2 %, tolerance > 3.5 SE)
    assert np.std(sums) == pytest.approx(0.5, rel=0.01) and np.std(counts) == pytest.approx(2.0, rel=0.08)
    assert abs(np.mean(counts)) < 0.2 and abs(np.corrcoef(counts[:-1], counts[1:])[0, 1]) < 0.12
    assert abs(np.corrcoef(sums[0], sums[1])[0, 1]) < 0.1  # fresh sum noise every round (the seed is split)
    reference = tfp.QuantileAdaptiveClipSumQuery(**args)
    _, _, reference_event = reference.get_noised_result(sample, reference.initial_global_state())
    assert repr(event) == repr(reference_event)  # the same DP event: the same accounting

@pytest.mark.slow
def test_fedcurv_refuses_adaptive_clipping():
    """u, v have no adaptive-clip joint release: the combination is refused, not reported with a partial ε."""
    with pytest.raises(ValueError, match="fedcurv with --dp-adaptive-clip"):
        _fedcurv(privacy=PrivacyConfig(dp_noise_multiplier=1.0, dp_adaptive_clip=True))


def test_dp_fedcurv_reports_one_joint_release_per_round_and_no_training_metrics(data):
    """(update, (u, v)) each clipped to C: noise z·√2·C per coordinate, ε of z over the rounds; the
    DP clients send no training metrics (no train_loss column)."""
    config = _fedcurv(privacy=PrivacyConfig(dp_noise_multiplier=0.8, dp_clip=0.5))
    result = run_federated(data, THESIS_SPLIT, config)
    section = result["privacy"]
    q = 2 / len(THESIS_SPLIT.train)
    assert section["epsilon"] == pytest.approx(accounting.epsilon(0.8, 1e-5, rounds=2, sampling_rate=q))
    assert section["noise_stddev_on_sum"] == pytest.approx(0.8 * np.sqrt(2) * 0.5)
    assert "(u_b, v_b)" in section["covers"] and "training metrics" in section["not_sent"][0]
    assert not any("train_loss" in row for row in result["extra"]["rounds"])
    assert np.all(np.isfinite(_kernel(result)))


@pytest.mark.parametrize("kwargs,match", [
    (dict(dp_noise_multiplier=1.0, dp_adaptive_clip=True, secure_aggregation=True), "fixed clip"),
    (dict(dp_adaptive_clip=True), "needs --dp-epsilon"),
    (dict(dp_noise_multiplier=1.0, dp_clip=0.0), "clip"),
    (dict(dp_noise_multiplier=-1.0), "noise multiplier"),
    (dict(dp_noise_multiplier=1.0, dp_delta=1.0), "delta"),
])
def test_bad_learning_privacy_settings(kwargs, match):
    """The boundary of LearningPrivacy's settings: the run's PrivacyConfig."""
    with pytest.raises(ValueError, match=match):
        PrivacyConfig(**kwargs)


def _curvature_after_a_round(privacy, scales: tuple[float, ...]) -> list:
    """FedCurv's (u, v) and client-work measurements after one round on 3 random clients whose
    inputs have each of ``scales`` (one process, built once)."""
    import tensorflow as tf
    import tensorflow_federated as tff

    from tff_esn.federated.model import build_thesis_model, thesis_loss
    from tff_esn.federated.processes import curvature
    from tff_esn.federated.processes import build_process
    from tff_esn.privacy.learning import lower_secure_process

    spec = (tf.TensorSpec([None, 5, 6], tf.float32), tf.TensorSpec([None, 5, 1], tf.float32))

    def model_fn():
        return tff.learning.models.from_keras_model(build_thesis_model(6, MODEL, readout_only=True),
                                                    loss=thesis_loss(MODEL), input_spec=spec)

    process = build_process(_fedcurv(clients_per_round=3), model_fn, privacy=privacy)
    if privacy is not None and privacy.secure:
        process = lower_secure_process(process)
    out = []
    for scale in scales:
        rng = np.random.default_rng(5)
        data = [tf.data.Dataset.from_tensor_slices((scale * rng.uniform(-1, 1, (8, 5, 6)).astype(np.float32),
                                                    rng.integers(0, 2, (8, 5, 1)).astype(np.float32))).batch(4)
                for _ in range(3)]
        output = process.next(process.initialize(), data)
        u, v = curvature(output.state)
        out.append((np.concatenate([np.ravel(t) for t in u + v]), output.metrics["client_work"]))
    return out


def test_secure_fedcurv_sums_u_and_v_as_the_plain_sum_and_counts_what_its_range_clipped():
    from tff_esn.privacy.learning import secure_clipped

    [(plain, _)] = _curvature_after_a_round(None, (0.05,))
    (secure, work), (_, big) = _curvature_after_a_round(LearningPrivacy(secure=True), (0.05, 30.0))
    assert np.abs(plain).max() > 0 and secure_clipped(work["curvature"]) == 0
    np.testing.assert_allclose(secure, plain, rtol=1e-4, atol=1e-6)
    assert "secure_sum_measurements" in work["train"]  # secure_sum_then_finalize
    assert secure_clipped(big["curvature"]) > 0  # u beyond the first round's bound of 50: counted, and warned
