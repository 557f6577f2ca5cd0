"""The discriminator's training data: readout deltas of a "real" and a "fake" ESN (thesis §6.1, ch. 4).

Both ESNs share the server's reservoir and initial readout and train with the clients' optimiser; the
fake one sees inputs plus Gaussian noise (std 1.0). A delta is ``w_{t−1} − w_t`` (kernel then bias),
labelled 1 (real) or 0 (fake); the first ``1 − test_fraction`` of the steps train, the rest test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from tff_esn.common import streams
from discriminator.configs import DeltaConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated import clients as client_data
from tff_esn.federated.configs import loss_labels
from tff_esn.esn.model import readout_probabilities
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, thesis_loss
from tff_esn.common.metrics import classification_metrics
from tff_esn.runtime import load_tff

tff = load_tff()

REAL, FAKE = 1, 0
"""Labels of the deltas: 1 = real (a valid client), 0 = fake (an anomalous client)."""



@dataclasses.dataclass(frozen=True, eq=False)
class DeltaSet:
    """Labelled readout deltas split by time.

    Attributes:
        x_train, x_test: (n, (U + 1)·C) float32 deltas ``w_{t−1} − w_t`` (kernel, then bias).
        y_train, y_test: (n,) int64 labels, :data:`REAL` or :data:`FAKE`.
        step_train, step_test: (n,) int64 optimisation step of each delta (1-based, per ESN).
        esn_metrics: the real and fake ESNs' final readouts scored on the test subjects
            (``{"real": {...}, "fake": {...}}``; empty without test subjects).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    step_train: np.ndarray
    step_test: np.ndarray
    esn_metrics: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def n_inputs(self) -> int:
        return int(self.x_train.shape[1])


def readout_trajectory(states: np.ndarray, labels: np.ndarray, config: ThesisModelConfig, *, steps: int,
                       seed: int, restart_every: int | None = None) -> np.ndarray:
    """The readout's weights after every step of Adam on ``(states, labels)``.

    Args:
        states: reservoir states, (n, T, U) per step or (n, U) per sequence.
        labels: float targets shaped like the model's output.
        config: the thesis model (readout initialisation, learning rate, batch size, loss).
        steps: optimisation steps; the data is passed over as often as needed,
            reshuffled each pass (seeded).
        restart_every: reset Adam's state every this many steps (``None``: never).

    Returns:
        (steps + 1, (U + 1)·C) float32: row 0 the initial readout, row t the readout after
        step t, each as kernel (U·C, row-major) then bias (C).
    """
    units = config.reservoir.units
    model = build_thesis_model(units, config, readout_only=True)
    loss_fn = thesis_loss(config)
    optimizer = tff.learning.optimizers.build_adam(config.learning_rate)
    variables = tuple(model.trainable_variables)
    specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in variables)
    passes = math.ceil(steps / math.ceil(len(states) / config.batch_size))
    ds = client_data.seeded_epochs(tf.data.Dataset.from_tensor_slices((states, labels)), len(states),
                                   config.batch_size, passes, seed).take(steps)

    def flat() -> tf.Tensor:
        return tf.concat([tf.reshape(v, [-1]) for v in variables], axis=0)

    @tf.function
    def train() -> tf.Tensor:
        opt_state = optimizer.initialize(specs)
        trajectory = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(0, flat())
        step = tf.constant(1)
        for x, y in ds:
            if restart_every is not None and (step - 1) % restart_every == 0:
                opt_state = optimizer.initialize(specs)
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            opt_state, updated = optimizer.next(opt_state, variables, tuple(tape.gradient(loss, variables)))
            for var, value in zip(variables, updated):
                var.assign(value)
            trajectory = trajectory.write(step, flat())
            step += 1
        return trajectory.stack()

    return train().numpy()


def _esn_metrics(weights: np.ndarray, states: np.ndarray, labels: np.ndarray, n_classes: int) -> dict[str, Any]:
    c = 1 if n_classes == 2 else n_classes
    kernel, bias = weights[:-c].reshape(-1, c), weights[-c:]
    return classification_metrics(labels, readout_probabilities(states, kernel, bias), n_classes)


def generate_deltas(subjects: ClientSequences | Mapping[str, ClientSequences], config: DeltaConfig = DeltaConfig(),
                    *, test_subjects: ClientSequences | Mapping[str, ClientSequences] | None = None) -> DeltaSet:
    """Real and fake readout deltas of every training step, split by time (thesis §6.1).

    Args:
        subjects: the held-out subjects' sequences (thesis: the two subjects of the
            ``thesis-discriminative`` split), pooled when given per subject.
        config: generation settings.
        test_subjects: optional clean sequences on which the final real and fake readouts
            are scored (thesis: test F1 0.8839 real, 0.8836 fake).

    Returns:
        A :class:`DeltaSet` with ``steps`` deltas per ESN.
    """
    data = _pooled(subjects, "subjects")
    model = config.model
    labels = client_data.targets(data, model)
    n_test = max(1, int(round(config.test_fraction * config.steps)))
    if n_test >= config.steps:
        raise ValueError(f"generate_deltas: {config.steps} steps per ESN leave no training deltas with test_fraction "
                         f"{config.test_fraction}; use more steps.")
    inputs = {REAL: data.x,
              FAKE: client_data.noisy(data.x, config.noise_std, streams.DISCRIMINATOR_NOISE.seed(config.seed))}
    shuffle_seed = streams.DISCRIMINATOR_SHUFFLE.seed(config.seed)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("x_train", "y_train", "x_test", "y_test", "s_train", "s_test")}
    finals = {}
    for label, x in inputs.items():
        states = client_data.reservoir_states(x, model.reservoir, model, lengths=data.lengths)
        trajectory = readout_trajectory(states, labels, model, steps=config.steps, seed=shuffle_seed,
                                        restart_every=config.restart_every)
        deltas = trajectory[:-1] - trajectory[1:]
        finals[label] = trajectory[-1]
        cut = len(deltas) - n_test
        step = np.arange(1, len(deltas) + 1, dtype=np.int64)
        parts["x_train"].append(deltas[:cut])
        parts["x_test"].append(deltas[cut:])
        parts["y_train"].append(np.full(cut, label, np.int64))
        parts["y_test"].append(np.full(n_test, label, np.int64))
        parts["s_train"].append(step[:cut])
        parts["s_test"].append(step[cut:])
    metrics = {}
    if test_subjects is not None:
        test = _pooled(test_subjects, "test_subjects")
        test_states = client_data.client_states(test, model.reservoir, model)
        test_labels = loss_labels([test], model).astype(np.int64)
        metrics = {name: _esn_metrics(finals[label], test_states, test_labels, model.n_classes)
                   for name, label in (("real", REAL), ("fake", FAKE))}
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    return DeltaSet(cat["x_train"].astype(np.float32), cat["y_train"], cat["x_test"].astype(np.float32),
                    cat["y_test"], cat["s_train"], cat["s_test"], metrics)


def _pooled(subjects: ClientSequences | Mapping[str, ClientSequences], name: str) -> ClientSequences:
    if isinstance(subjects, ClientSequences):
        return subjects
    if isinstance(subjects, Mapping) and subjects and all(isinstance(c, ClientSequences) for c in subjects.values()):
        return ClientSequences.concat(subjects.values())
    raise TypeError(f"{name}: expected ClientSequences or a non-empty mapping id → ClientSequences, "
                    f"got {type(subjects).__name__}.")
