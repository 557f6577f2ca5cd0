"""The privacy audit: every value a client sends, in every built computation that claims privacy.

For each algorithm with privacy × {secure aggregation, DP, both} the TFF computation the run
builds is walked (:mod:`tff_esn.privacy.audit`) with its secure intrinsics in place; any
client-derived value summed in the clear under secure aggregation, or reaching the server
unclipped / un-noised under DP, fails — except the values :mod:`tff_esn.privacy.coverage`
declares public for that algorithm. pFedRR and Partial IncFed under DP alone run no TFF
computation (each client noises its own statistics in numpy before its upload, and numpy sums
them): with secure aggregation their secure sum is audited with the uploads declared
released (``inputs_released``), and their local mechanism is checked by the sensitivity tests.
"""

import dataclasses

import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_esn.closed_form import incfed
from tff_esn.closed_form.fedip import IPConfig, build_fedip_process
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.client_work import build_readout_client_work
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, thesis_loss
from tff_esn.registry.algorithms import get_algorithm
from tff_esn.federated.processes import build_process
from tff_esn.privacy import aggregation, audit, coverage
from tff_esn.privacy.closed_form import stats_aggregation
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.dp_fedip import GaussianUpdates
from tff_esn.privacy.learning import LearningPrivacy
from tff_esn.privacy.secure_sum import FixedPoint

SETTINGS = {"secure": dict(secure=True, dp=False), "dp": dict(secure=False, dp=True),
            "both": dict(secure=True, dp=True)}
UNITS, INPUTS, STEPS, CLIENTS = 5, 3, 6, 3
MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=4), batch_size=4,
                          learning_rate=0.05)
SPEC = (tf.TensorSpec([None, STEPS, UNITS], tf.float32), tf.TensorSpec([None, STEPS, 1], tf.float32))


def _model_fn():
    return tff.learning.models.from_keras_model(build_thesis_model(UNITS, MODEL, readout_only=True),
                                                loss=thesis_loss(MODEL), input_spec=SPEC)


def _toy_filter(kernel_delta, bias_delta):
    """A client filter as the discriminator is one: TF ops on the readout delta, a boolean verdict."""
    return tf.reduce_sum(tf.abs(kernel_delta)) + tf.reduce_sum(tf.abs(bias_delta)) < 1.0


@pytest.fixture
def secure_intrinsics_in_place(monkeypatch):
    """Builders lower the secure intrinsics for TFF's native runtime; the audit reads them as deployed."""
    cached = (incfed.build_incfed_computation, incfed.build_incfed_stats_computation, aggregation.build_secure_sum)
    for builder in cached:
        builder.cache_clear()
    monkeypatch.setattr(tff.backends.test, "replace_secure_intrinsics_with_bodies", lambda comp: comp)
    yield
    for builder in cached:
        builder.cache_clear()


def _learning(algorithm: str, setting: str, client_filter) -> list:
    flags = SETTINGS[setting]
    privacy = LearningPrivacy(noise_multiplier=1.0 if flags["dp"] else None, clip=0.5, secure=flags["secure"])
    config = get_algorithm(algorithm).config(model=MODEL, rounds=2, clients_per_round=2)
    return [(build_process(config, _model_fn, privacy=privacy, client_filter=client_filter).next, ())]


def _privacy(setting: str) -> PrivacyConfig:
    flags = SETTINGS[setting]
    return PrivacyConfig(secure_aggregation=flags["secure"], dp_noise_multiplier=1.0 if flags["dp"] else None)


def _incfed(setting: str, model: str = "central") -> list:
    privacy = dataclasses.replace(_privacy(setting), dp_model=model)
    agg = stats_aggregation(privacy, state_mode="last", washout=0, n_features=UNITS + 1, steps=STEPS,
                            client_sequences=[4] * CLIENTS)
    comp = incfed.build_incfed_computation(INPUTS, STEPS, UNITS, 2, 1.0, StateSpec("last", 0, True), False,
                                           aggregation=agg)
    return [(comp, (3,))]  # (reservoir, datasets, l2, seeds): the clients' DP noise seeds


def _fedip(setting: str) -> list:
    flags = SETTINGS[setting]
    weights = ReservoirWeights.from_config(MODEL.reservoir, INPUTS)
    dp = GaussianUpdates(1.0, 1e-5, 1.0, CLIENTS) if flags["dp"] else None
    secure = FixedPoint(48, 1.0 if dp else 100.0, CLIENTS) if flags["secure"] else None
    return [(build_fedip_process(weights, STEPS, IPConfig(), secure, dp).next, ()), *_incfed(setting)]


def _secure_sum(setting: str) -> list:
    shapes = ((2, UNITS + 1), (UNITS + 1, UNITS + 1), ())
    return [(aggregation.build_secure_sum(shapes, FixedPoint(48, 100.0, CLIENTS)), ())]


BUILDERS = {
    "incfed": _incfed,
    "fedip": _fedip,
    "pfedrr": _secure_sum,
    "partial-incfed": _secure_sum,
    "fedavg": lambda setting: _learning("fedavg", setting, None),
    "fedcurv": lambda setting: _learning("fedcurv", setting, None),
    "fedavg+disc": lambda setting: _learning("fedavg", setting, _toy_filter),
    "fedcurv+disc": lambda setting: _learning("fedcurv", setting, _toy_filter),
}
NO_COMPUTATION = {("pfedrr", "dp"), ("partial-incfed", "dp")}  # local DP in numpy, numpy sum (module docstring)
MATRIX = [(name, setting) for name in BUILDERS for setting in SETTINGS if (name, setting) not in NO_COMPUTATION]


def _audit(name: str, setting: str) -> tuple[list, list[str]]:
    algorithm, disc = name.removesuffix("+disc"), name.endswith("+disc")
    flags = SETTINGS[setting]
    released = flags["dp"] and algorithm in ("pfedrr", "partial-incfed")  # local DP before the upload
    declared = coverage.declaration(get_algorithm(algorithm).privacy, own_client_work=disc, **flags)
    flows, problems = [], []
    for computation, seeds in BUILDERS[name](setting):
        found = audit.client_flows(computation, inputs_released=released, seed_parameters=seeds)
        flows += found
        problems += audit.violations(found, public=list(declared["public"]), **flags)
    return flows, problems


@pytest.mark.usefixtures("secure_intrinsics_in_place")
@pytest.mark.parametrize("name,setting", MATRIX)
def test_every_client_value_is_covered_or_declared_public(name, setting):
    flows, problems = _audit(name, setting)
    assert problems == []
    derived = [f for f in flows if f.client_derived]
    assert derived, "the audit saw no client data leave the clients"
    declared = coverage.declaration(get_algorithm(name.removesuffix("+disc")).privacy,
                                    own_client_work=name.endswith("+disc"), **SETTINGS[setting])
    for flow in derived:
        assert flow.public_names() <= set(declared["public"])
    if name.startswith("fedcurv"):
        curvature = [f for f in derived if "u=" in f.value_type or f.value_type.count("float32[5,1]") >= 2]
        assert curvature and all(f.secure or not SETTINGS[setting]["secure"] for f in curvature)
    if name.endswith("+disc") and SETTINGS[setting]["dp"]:
        assert any("accepted_clients" in f.public_names() for f in derived)


@pytest.mark.parametrize("setting", ["secure", "dp"])
def test_audit_fails_fedcurv_with_plain_curvature_and_metric_sums(setting):
    """FedCurv whose u, v and training metrics go through plain sums (the aggregators of a run
    without privacy) next to a private model aggregator: the audit names the u/v sum."""
    flags = SETTINGS[setting]
    work = build_readout_client_work(_model_fn, tff.learning.optimizers.build_sgdm(0.1), penalty=1e-4)
    problems = audit.violations(audit.client_flows(work.next), public=["clients"], **flags)
    assert any("u=" in line for line in problems) and any("loss=" in line for line in problems)


def test_audit_refuses_an_undeclared_public_name():
    with pytest.raises(ValueError, match="allow-list"):
        audit.violations([], secure=True, dp=False, public=["loss"])
    with pytest.raises(ValueError, match="allow-list"):
        coverage.public(None, "loss")
