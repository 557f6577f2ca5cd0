"""A trained ESN as one object (:class:`Model`): its reservoir(s), the states its readout sees, the readout and
the task. It predicts and scores sequences (IncFed eqs. 1–2; thesis §6.1 for a dense readout) and saves to a
pickle-free folder (``model.json`` + ``arrays.npz``) that loads without TensorFlow."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common.tasks import Task
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats, predict as ridge_predict, size_weighted_mean
from tff_esn.esn.standardization import Standardization
from tff_esn.esn.states_numpy import HARVEST_BATCH, ragged_batches, states, states_and_statistics
from tff_esn.esn.weights import ReservoirWeights, StateSpec

FORMAT = "tff_esn.model"
FORMAT_VERSION = 1
"""The folder format's name and version (``model.json``); a loader refuses any other."""

READOUT_KINDS = ("ridge", "dense")
DENSE_ACTIVATIONS = ("sigmoid", "softmax", "identity")


class ModelFormatError(ValueError):
    """A model folder that is not one this version reads: another format version, a missing or damaged file."""


def readout_probabilities(states: np.ndarray, kernel: np.ndarray, bias: np.ndarray, *,
                          linear: bool = False) -> np.ndarray:
    """The dense readout on ``states`` (…, U) as rows: ``sigmoid(x w + b)`` (n,) (thesis Alg. 2 line 18),
    ``softmax(x W + b)`` (n, K) or ``linear`` ``x W + b`` (n,) ((n, C) of C > 1 columns); the product float32 as
    Keras', the rest float64."""
    z = (states.reshape(-1, states.shape[-1]) @ kernel.astype(np.float32)).astype(np.float64) + bias
    if linear:
        return z[:, 0] if z.shape[1] == 1 else z
    if z.shape[1] == 1:
        with np.errstate(over="ignore"):  # exp(−z) = inf for z ≪ 0: the probability is 0, as it should be
            return 1.0 / (1.0 + np.exp(-z[:, 0]))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclasses.dataclass(frozen=True, eq=False)
class Readout:
    """A readout of state features: ``ridge`` ``[s, 1] Wᵀ`` (IncFed eq. 2; ``weights`` (N_Y, N_features)), or
    ``dense`` ``f(((s − μ) / σ) W + b)`` (thesis §6.1; ``weights`` the kernel (U, C), ``bias`` (C,),
    ``activation`` f, ``standardization`` (μ, σ) or none)."""

    kind: str
    weights: np.ndarray
    bias: np.ndarray | None = None
    activation: str = "identity"
    standardization: Standardization | None = None

    def __post_init__(self) -> None:
        if self.kind not in READOUT_KINDS:
            raise ValueError(f"Readout.kind: one of {READOUT_KINDS}, got {self.kind!r}.")
        weights = np.asarray(self.weights, np.float64 if self.kind == "ridge" else np.float32)
        # a dense readout trained by gradient steps may have diverged: its outputs are then non-finite, and so are
        # the metrics of real targets (Task.report)
        if weights.ndim != 2 or (self.kind == "ridge" and not np.all(np.isfinite(weights))):
            raise ValueError(f"Readout.weights: expected a {'finite ' * (self.kind == 'ridge')}2-D array, got shape "
                             f"{weights.shape}.")
        object.__setattr__(self, "weights", weights)
        if self.kind == "dense":
            if self.activation not in DENSE_ACTIVATIONS:
                raise ValueError(f"Readout.activation: one of {DENSE_ACTIVATIONS}, got {self.activation!r}.")
            bias = np.asarray(self.bias if self.bias is not None else np.zeros(weights.shape[1]), np.float32)
            if bias.shape != (weights.shape[1],):
                raise ValueError(f"Readout.bias: expected shape ({weights.shape[1]},), got {bias.shape}.")
            object.__setattr__(self, "bias", bias)

    @property
    def n_outputs(self) -> int:
        """Columns of the output: N_Y (ridge), the dense kernel's columns."""
        return int(self.weights.shape[0] if self.kind == "ridge" else self.weights.shape[1])

    def outputs(self, states: np.ndarray, readout_bias: bool) -> np.ndarray:
        """The readout's outputs on (m, U) ``states``: (m, N_Y) ridge outputs, or the dense readout's
        (m,) probabilities / real outputs (one column) or (m, K) softmax probabilities."""
        if self.kind == "ridge":
            return ridge_predict(self.weights, states, bias=readout_bias)
        rows = np.asarray(states, np.float32)
        if self.standardization is not None:
            rows = self.standardization.apply(rows)
        return readout_probabilities(rows, self.weights, self.bias, linear=self.activation == "identity")


@dataclasses.dataclass(frozen=True, eq=False)
class Member:
    """One reservoir and its readout; ``size`` weighs its outputs in an ensemble (IncFed eq. 4: ``n_c / n``)."""

    reservoir: ReservoirWeights
    readout: Readout
    size: float = 1.0
    config: ReservoirConfig | None = None


def as_sequences(x: Any, lengths: Any = None, *, n_features: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Sequences as ``(x (n, T, F) float32 right-padded, lengths (n,) or None)``: from an (n, T, F) array (with
    optional ``lengths``) or a list of (T_i, F) arrays of unequal length; one-line errors for anything else."""
    if isinstance(x, (list, tuple)):
        if lengths is not None:
            raise ValueError("lengths: give it with an (n, T, F) array only; a list of sequences carries its lengths.")
        parts = [np.asarray(s, np.float32) for s in x]
        if not parts or any(p.ndim != 2 or len(p) == 0 for p in parts) or len({p.shape[1] for p in parts}) != 1:
            raise ValueError("x: expected a non-empty list of (T_i, F) arrays with one feature count F and T_i ≥ 1, "
                             f"got shapes {[p.shape for p in parts[:5]]}{' …' if len(parts) > 5 else ''}.")
        steps = np.array([len(p) for p in parts], np.int64)
        padded = np.zeros((len(parts), int(steps.max()), parts[0].shape[1]), np.float32)
        for i, p in enumerate(parts):
            padded[i, :len(p)] = p
        x, lengths = padded, steps
    else:
        x = np.asarray(x, np.float32)
        if x.ndim != 3 or 0 in x.shape:
            raise ValueError(f"x: expected sequences as an (n, T, F) array or a list of (T_i, F) arrays, got shape "
                             f"{x.shape}.")
        if lengths is not None:
            lengths = np.asarray(lengths, np.int64)
            if lengths.shape != (len(x),) or lengths.min() < 1 or lengths.max() > x.shape[1]:
                raise ValueError(f"lengths: expected ({len(x)},) integers in [1, {x.shape[1]}], got "
                                 f"shape {lengths.shape}.")
            x = np.where(np.arange(x.shape[1])[None, :, None] < lengths[:, None, None], x, np.float32(0))
            lengths = None if np.all(lengths == x.shape[1]) else lengths
    if not np.all(np.isfinite(x)):
        raise ValueError("x: contains NaN or inf; fill or drop those steps first.")
    if n_features is not None and x.shape[2] != n_features:
        raise ValueError(f"x: {x.shape[2]} features per step, the model was trained on {n_features}; give the "
                         "same input channels in the same order.")
    return x, lengths


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """A trained ESN: ``members`` (one reservoir and readout; several for an ensemble), the states the readout sees
    (``spec``; ``per_step``: one output per step), the input standardisation ``inputs`` (applied to ``x``) and the
    target's ``outputs`` (real outputs ``ŷ·σ + μ``: the series' own units), the task and its names, the run's
    provenance and metrics, and (kept for extension) the aggregate ridge statistics. ``channels``: the input
    channels a ridge readout's outputs forecast one step ahead, in output order (a joint forecast of several
    channels, :func:`joint_forecast`); empty: one output, the task's target."""

    members: tuple[Member, ...]
    spec: StateSpec
    task: Task
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    per_step: bool = False
    inputs: Standardization | None = None
    outputs: Standardization | None = None
    seed: int = 0
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    metrics: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    stats: RidgeStats | None = None
    channels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        members = tuple(self.members)
        if not members:
            raise ValueError("Model: needs at least one member (a reservoir and its readout).")
        inputs = {m.reservoir.n_inputs for m in members}
        if inputs != {len(self.feature_names)}:
            raise ValueError(f"Model: reservoirs take {sorted(inputs)} inputs, feature names are "
                             f"{len(self.feature_names)}.")
        channels = tuple(self.channels)
        if channels and (self.task.target not in channels or len(set(channels)) != len(channels)
                         or not set(channels) <= set(self.feature_names)
                         or {m.readout.n_outputs for m in members} != {len(channels)}):
            raise ValueError(f"Model.channels: expected distinct input channels including the target "
                             f"{self.task.target!r}, one per readout output, got {channels}.")
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "feature_names", tuple(self.feature_names))
        object.__setattr__(self, "label_names", tuple(self.label_names))

    # ------------------------------------------------------------------ prediction
    @property
    def n_outputs(self) -> int:
        """Classes of a classifier (its label names), 1 for real targets."""
        return 1 if self.task.real else len(self.label_names)

    @property
    def classifier(self) -> bool:
        return not self.task.real

    def states(self, x: Any, lengths: Any = None, *, member: int = 0) -> np.ndarray:
        """The states the readout of ``member`` sees, float64 rows: (n, U) per sequence (``last``, ``mean``, or
        ``all`` averaged over steps), or (n·(T − washout), U) per step (IncFed eq. 1; IncFed §III's state modes);
        with ``spec.raw_inputs`` each row is ``[u, x]``, the (standardised) input read as the state is."""
        x, lengths = as_sequences(x, lengths, n_features=len(self.feature_names))
        return self._states(self.members[member].reservoir, *self._inputs(x, lengths))

    def _inputs(self, x: np.ndarray, lengths: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        spec = self.spec
        shortest = int(x.shape[1] if lengths is None else lengths.min())
        if spec.state_mode != "last" and spec.washout >= shortest:
            raise ValueError(f"x: the shortest sequence has {shortest} steps, not more than the model's washout "
                             f"({spec.washout}); give longer sequences.")
        if self.inputs is not None:
            x = self.inputs.apply(x)
            if lengths is not None:
                x = np.where(np.arange(x.shape[1])[None, :, None] < lengths[:, None, None], x, np.float32(0))
        return x, lengths

    def _states(self, weights: ReservoirWeights, x: np.ndarray, lengths: np.ndarray | None) -> np.ndarray:
        spec = self.spec
        per_step = self.per_step and spec.state_mode == "all"
        keep = "all" if per_step else ("mean" if spec.state_mode == "all" else spec.state_mode)
        n = len(x)
        width = spec.width(weights)
        out = np.zeros((n,) + ((x.shape[1] - spec.washout,) if per_step else ()) + (width,), np.float64)
        blocks = (ragged_batches(lengths, x.shape[2]) if lengths is not None
                  else [np.arange(i, min(i + HARVEST_BATCH, n)) for i in range(0, n, HARVEST_BATCH)])
        for rows in blocks:
            longest = int(lengths[rows].max()) if lengths is not None and not per_step else x.shape[1]
            batch = x[rows[0]:rows[-1] + 1] if lengths is None else x[rows, :longest]
            out[rows], _ = states_and_statistics(
                batch, weights.kernel, weights.recurrent, weights.bias, weights.gain, weights.leaky, keep=keep,
                washout=spec.washout, lengths=None if lengths is None else lengths[rows], layers=weights.layers,
                readout_from=weights.readout_from, activation=weights.activation, with_inputs=spec.raw_inputs)
        return out.reshape(-1, width)

    def decision_function(self, x: Any, lengths: Any = None) -> np.ndarray:
        """The readout's outputs, one row per prediction (a sequence, or a step with ``per_step``): ridge (m, N_Y);
        a dense readout's (m,) probabilities of class 1 or real outputs, or (m, K) probabilities; an ensemble's
        size-weighted mean of its members' outputs (IncFed eq. 4)."""
        x, lengths = as_sequences(x, lengths, n_features=len(self.feature_names))
        return self._outputs(*self._inputs(x, lengths))

    def _outputs(self, x: np.ndarray, lengths: np.ndarray | None) -> np.ndarray:
        return self._readout_outputs([self._states(m.reservoir, x, lengths) for m in self.members])

    @property
    def fed_back(self) -> tuple[str, ...]:
        """The input channels a free run feeds its forecasts back into: :attr:`channels`, else the target."""
        return self.channels or (self.task.target,)

    def _target_outputs(self, outputs: np.ndarray) -> np.ndarray:
        """The outputs forecasting the task's target: a joint forecast's column of it, else ``outputs``."""
        if not self.channels:
            return outputs
        column = self.channels.index(self.task.target)
        return outputs[:, column:column + 1]

    def _readout_outputs(self, features: Sequence[np.ndarray]) -> np.ndarray:
        """The members' readouts on their state ``features``, combined (IncFed eq. 4) and in the data's units."""
        outputs = [m.readout.outputs(f, self.spec.readout_bias) for m, f in zip(self.members, features)]
        mean = outputs[0] if len(outputs) == 1 else size_weighted_mean(outputs, [m.size for m in self.members])
        if self.outputs is None:
            return mean
        return np.asarray(mean, np.float64) * self.outputs.scale + self.outputs.mean

    def predict(self, x: Any, lengths: Any = None) -> np.ndarray:
        """Class indices (into :attr:`label_names`) or real values: (n,) per sequence, (n, T − washout) per step."""
        x, lengths = as_sequences(x, lengths, n_features=len(self.feature_names))
        outputs = self._target_outputs(self._outputs(*self._inputs(x, lengths)))
        if self.classifier:
            from tff_esn.common.metrics import predictions

            values = predictions(outputs)
        else:
            values = outputs[:, 0] if outputs.ndim == 2 else outputs
        return values.reshape(len(x), -1) if self.per_step and self.spec.state_mode == "all" else values

    def predict_proba(self, x: Any, lengths: Any = None) -> np.ndarray:
        """Class probabilities (m, K) of a dense (logistic or softmax) readout; a ridge readout has none."""
        if not self.classifier or any(m.readout.kind != "dense" for m in self.members):
            raise AttributeError("predict_proba: this model's outputs are not probabilities (a ridge readout or real "
                                 "targets); use decision_function for its scores.")
        p = self.decision_function(x, lengths)
        return np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p

    def generate(self, warmup: Any, steps: int, *, exog: Any = None) -> np.ndarray:
        """A free run (closed loop): the reservoir reads ``warmup`` (T₀, F), then ``steps`` times the model's
        one-step forecasts of the channels it feeds back (:attr:`fed_back`: its target, or every channel of a joint
        forecast) are fed back as their next inputs (the other E = F − fed-back channels from ``exog``
        (steps − 1, E), inputs known ahead); returns the ``steps`` forecasts ŷ(T₀), …, ŷ(T₀ + steps − 1) of the
        target channel, in the data's units."""
        task = self.task
        if task.kind != "forecast" or task.horizon != 1 or task.target not in self.feature_names or not self.per_step:
            raise ValueError(f"generate: needs a one-step forecast of one of its inputs (--task forecast --horizon 1), "
                             f"got task {task.kind} horizon {task.horizon} of {task.target!r} on inputs "
                             f"{', '.join(self.feature_names)}.")
        fed = [self.feature_names.index(c) for c in self.fed_back]
        target = self.fed_back.index(task.target)
        x, _ = as_sequences(np.asarray(warmup, np.float32)[None], n_features=len(self.feature_names))
        others = len(self.feature_names) - len(fed)
        known = np.zeros((max(steps - 1, 0), others), np.float32) if exog is None else np.asarray(exog, np.float32)
        if not isinstance(steps, (int, np.integer)) or steps < 1 or (others and exog is None) or \
                known.shape != (max(steps - 1, 0), others) or not np.all(np.isfinite(known)):
            fed_names = ", ".join(map(repr, self.fed_back))
            raise ValueError(f"generate: expected steps ≥ 1 and, for the inputs besides {fed_names}, "
                             f"exog of shape ({max(steps - 1, 0)}, {others}) finite, got steps {steps!r}, exog "
                             f"{None if exog is None else known.shape}.")
        scaled = (lambda v: v) if self.inputs is None else self.inputs.apply
        read = scaled(x)
        current = [self._last_state(m.reservoir, read) for m in self.members]
        rest = [i for i in range(len(self.feature_names)) if i not in fed]
        out = np.empty(steps, np.float64)
        for k in range(steps):
            features = [state[:, m.reservoir.readout_from:] for state, m in zip(current, self.members)]
            if self.spec.raw_inputs:  # the row [u(t), x(t)] of the input last read beside the state
                features = [np.concatenate([read[:, -1], f], axis=1) for f in features]
            forecast = np.asarray(self._readout_outputs(features), np.float64).reshape(-1)
            out[k] = forecast[target]
            if k + 1 < steps:
                step = np.empty(len(self.feature_names), np.float32)
                step[fed], step[rest] = forecast, known[k]
                read = scaled(step[None, None])
                current = [self._last_state(m.reservoir, read, state) for m, state in zip(self.members, current)]
        return out

    @staticmethod
    def _last_state(weights: ReservoirWeights, x: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
        """The reservoir's full state (1, units) after reading ``x`` (1, T, F) from ``initial`` (IncFed eq. 1)."""
        state = initial
        for state in states(x, weights.kernel, weights.recurrent, weights.bias, weights.gain, weights.leaky, None,
                            weights.layers, weights.activation, initial):
            pass
        return np.array(state, np.float32)

    def labels(self, y: Any, n: int) -> np.ndarray:
        """The labels a prediction row is scored against: ``y`` (n,), or (n, T) per step as the state mode reads it."""
        y = np.asarray(y)
        if y.shape[:1] != (n,) or y.ndim > 2:
            raise ValueError(f"y: expected ({n},) or ({n}, T) labels for {n} sequences, got shape {y.shape}.")
        if self.classifier:
            if y.dtype.kind not in "iu" or y.size and (y.min() < 0 or y.max() >= self.n_outputs):
                raise ValueError(f"y: expected integer class labels in [0, {self.n_outputs}) ({', '.join(self.label_names)}), "
                                 f"got {y.dtype} values in [{y.min()}, {y.max()}]; map unknown classes first.")
        if y.ndim == 2:
            if self.per_step and self.spec.state_mode == "all":
                return y[:, self.spec.washout:].reshape(-1)
            return y[:, -1]
        return y

    def score(self, x: Any, y: Any, lengths: Any = None) -> dict[str, Any]:
        """The task's metrics of the predictions on ``x`` against ``y``: the ``metrics.json`` group section
        (classes: accuracy, balanced accuracy, macro-F1, AUC, …; real: NRMSE, RMSE, MAE, R²)."""
        x, lengths = as_sequences(x, lengths, n_features=len(self.feature_names))
        labels = self.labels(y, len(x))
        outputs = self._target_outputs(self._outputs(*self._inputs(x, lengths)))
        return self.task.report(labels, outputs, self.n_outputs, seed=self.seed)

    # ------------------------------------------------------------------ the folder
    def save(self, path: str | os.PathLike) -> Path:
        """Writes the model into the folder ``path`` atomically (``model.json`` + ``arrays.npz``, no pickle)."""
        path = Path(path)
        arrays: dict[str, np.ndarray] = {}
        members = []
        for i, member in enumerate(self.members):
            r, readout = member.reservoir, member.readout
            for name in ("kernel", "recurrent", "bias", "gain"):
                arrays[f"m{i}.reservoir.{name}"] = getattr(r, name)
            arrays[f"m{i}.readout.weights"] = readout.weights
            if readout.bias is not None:
                arrays[f"m{i}.readout.bias"] = readout.bias
            if readout.standardization is not None:
                arrays[f"m{i}.readout.mean"] = readout.standardization.mean
                arrays[f"m{i}.readout.scale"] = readout.standardization.scale
            leaky = list(r.leaky) if isinstance(r.leaky, tuple) else float(r.leaky)
            members.append({"size": float(member.size),
                            "reservoir": {"leaky": leaky, "layers": list(r.layers), "readout_from": r.readout_from,
                                          "activation": r.activation if isinstance(r.activation, str)
                                          else list(r.activation),
                                          "config": None if member.config is None else member.config.to_dict()},
                            "readout": {"kind": readout.kind, "activation": readout.activation,
                                        "standardized": readout.standardization is not None}})
        for name, scaling in (("inputs", self.inputs), ("outputs", self.outputs)):
            if scaling is not None:
                arrays[f"{name}.mean"], arrays[f"{name}.scale"] = scaling.mean, scaling.scale
        if self.stats is not None:
            arrays["stats.A"], arrays["stats.B"] = self.stats.A, self.stats.B
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        blob = buffer.getvalue()
        header = {
            "format": FORMAT, "version": FORMAT_VERSION,
            "task": dataclasses.asdict(self.task), "feature_names": list(self.feature_names),
            "label_names": list(self.label_names), "per_step": self.per_step,
            "spec": dataclasses.asdict(self.spec), "seed": self.seed, "members": members,
            "inputs": self.inputs is not None, "outputs": self.outputs is not None, "channels": list(self.channels),
            "stats": None if self.stats is None else {"n": float(self.stats.n), "clients": float(self.stats.clients),
                                                      "bias": bool(self.stats.bias)},
            "arrays_sha256": hashlib.sha256(blob).hexdigest(),
            "provenance": dict(self.provenance), "metrics": dict(self.metrics),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
        try:
            (tmp / "arrays.npz").write_bytes(blob)
            (tmp / "model.json").write_text(json.dumps(header, indent=1, default=_json_default) + "\n")
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}-old-", dir=path.parent))
                path.rename(old / path.name)
                tmp.rename(path)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """The model saved in the folder ``path``; :class:`ModelFormatError` (one line) for another format version,
        a missing, truncated or altered file."""
        path = Path(path)
        header_file, arrays_file = path / "model.json", path / "arrays.npz"
        if not header_file.is_file() or not arrays_file.is_file():
            raise ModelFormatError(f"{path}: not a model folder (model.json and arrays.npz expected); give a run's "
                                   "DIR/model folder.")
        try:
            header = json.loads(header_file.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            raise ModelFormatError(f"{header_file}: not valid JSON ({err}); the file is damaged.") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ModelFormatError(f"{header_file}: not a {FORMAT} file.")
        if header.get("version") != FORMAT_VERSION:
            raise ModelFormatError(f"{header_file}: format version {header.get('version')!r}; this tff_esn reads "
                                   f"version {FORMAT_VERSION} only (load it with the tff_esn that wrote it).")
        blob = arrays_file.read_bytes()
        if hashlib.sha256(blob).hexdigest() != header.get("arrays_sha256"):
            raise ModelFormatError(f"{arrays_file}: its content does not match model.json's checksum; the file is "
                                   "truncated or altered.")
        try:
            with np.load(io.BytesIO(blob), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            return cls._from_header(header, arrays)
        except (KeyError, TypeError, ValueError, zipfile.BadZipFile, OSError) as err:
            raise ModelFormatError(f"{path}: cannot be read as a version-{FORMAT_VERSION} model ({err}).") from None

    @classmethod
    def _from_header(cls, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> "Model":
        members = []
        for i, m in enumerate(header["members"]):
            res, out = m["reservoir"], m["readout"]
            leaky = tuple(res["leaky"]) if isinstance(res["leaky"], list) else res["leaky"]
            activation = res["activation"] if isinstance(res["activation"], str) else tuple(res["activation"])
            weights = ReservoirWeights(*(arrays[f"m{i}.reservoir.{n}"] for n in ("kernel", "recurrent", "bias", "gain")),
                                       leaky, tuple(res["layers"]), res["readout_from"], activation)
            standardization = (Standardization(arrays[f"m{i}.readout.mean"], arrays[f"m{i}.readout.scale"])
                               if out["standardized"] else None)
            readout = Readout(out["kind"], arrays[f"m{i}.readout.weights"], arrays.get(f"m{i}.readout.bias"),
                              out["activation"], standardization)
            config = None if res["config"] is None else ReservoirConfig.from_dict(res["config"])
            members.append(Member(weights, readout, m["size"], config))
        stats = header["stats"]
        return cls(tuple(members), StateSpec(**header["spec"]), Task(**header["task"]), tuple(header["feature_names"]),
                   tuple(header["label_names"]), header["per_step"],
                   *(Standardization(arrays[f"{name}.mean"], arrays[f"{name}.scale"]) if header.get(name) else None
                     for name in ("inputs", "outputs")),
                   header["seed"], header["provenance"], header["metrics"],
                   None if stats is None else RidgeStats(arrays["stats.A"], arrays["stats.B"], stats["n"],
                                                         stats["clients"], stats["bias"]),
                   tuple(header.get("channels", ())))

    def replace(self, **changes: Any) -> "Model":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ exports
    def to_keras(self) -> Any:
        """This model as a ``tf.keras.Model`` whose outputs are :meth:`decision_function`'s
        (:mod:`tff_esn.esn.keras_export`; imports TensorFlow)."""
        from tff_esn.esn.keras_export import to_keras

        return to_keras(self)

    def to_reservoirpy(self) -> Any:
        """This model as reservoirpy nodes, a reservoir and a ridge readout (:mod:`tff_esn.esn.reservoirpy_nodes`)."""
        from tff_esn.esn.reservoirpy_nodes import to_reservoirpy

        return to_reservoirpy(self)

    @classmethod
    def from_reservoirpy(cls, reservoir: Any, readout: Any, *, state_mode: str = "last", washout: int = 0,
                         label_names: Sequence[str] | None = None, task: Task | None = None,
                         feature_names: Sequence[str] | None = None) -> "Model":
        """The model of a reservoirpy ``reservoir`` and ``Ridge`` ``readout``
        (:func:`~tff_esn.esn.reservoirpy_nodes.read_nodes`): its readout sees the ``last`` state, the ``mean`` after
        ``washout``, or ``all`` after it (one output per step); a classifier of ``label_names`` (one readout output
        each), else real targets of ``task`` (default regress)."""
        from tff_esn.esn.reservoirpy_nodes import read_nodes

        weights, ridge = read_nodes(reservoir, readout)
        names = tuple(label_names) if label_names is not None else ("y",)
        if len(names) != len(ridge):
            raise ValueError(f"from_reservoirpy: the readout has {len(ridge)} outputs, {len(names)} label names.")
        task = Task("classify") if label_names is not None else task or Task("regress")
        return model_of(weights, Readout("ridge", ridge), StateSpec(state_mode, washout, True), task,
                        feature_names or tuple(f"f{i}" for i in range(weights.n_inputs)), names,
                        per_step=state_mode == "all", provenance={"algorithm": "reservoirpy"})


def _json_default(value: Any) -> Any:
    """JSON for numpy scalars and arrays and tuples in provenance records."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"model.json: cannot write {type(value).__name__}.")


def model_of(weights: ReservoirWeights | Sequence[ReservoirWeights], readouts: Readout | Sequence[Readout],
             spec: StateSpec, task: Task, feature_names: Sequence[str], label_names: Sequence[str], *,
             sizes: Sequence[float] | None = None,
             config: ReservoirConfig | Sequence[ReservoirConfig] | None = None, **fields: Any) -> Model:
    """A :class:`Model` of one reservoir and readout, or of an ensemble (lists of reservoirs, readouts, ``sizes``
    and configurations)."""
    if isinstance(weights, ReservoirWeights):
        members = (Member(weights, readouts, 1.0, config),)
    else:
        configs = config if isinstance(config, (list, tuple)) else [config] * len(weights)
        members = tuple(Member(w, r, s, c) for w, r, s, c in zip(weights, readouts, sizes or [1.0] * len(weights),
                                                                 configs))
    return Model(members, spec, task, tuple(feature_names), tuple(label_names), **fields)


def joint_forecast(models: Sequence[Model]) -> Model:
    """One model forecasting several input channels one step ahead from one reservoir: the linear readouts of
    ``models`` (one-step forecasts of distinct input channels, each with the same reservoir, states and inputs; ridge,
    or dense of identity activation on the same state standardisation) stacked, one output per channel (each
    output's readout is its own). Its task is the first model's; a free run feeds every channel back
    (:meth:`Model.generate`)."""
    first = models[0]
    names = tuple(m.task.target for m in models)
    readouts = [m.members[0].readout for m in models]
    kind = readouts[0].kind
    same = all(len(m.members) == 1 and r.kind == kind and r.n_outputs == 1 and r.activation == "identity"
               and _same_scaling(r.standardization, readouts[0].standardization)
               and m.per_step and m.task.kind == "forecast" and m.task.horizon == 1 and m.spec == first.spec
               and m.feature_names == first.feature_names and _same_reservoir(m.members[0].reservoir,
                                                                            first.members[0].reservoir)
               and _same_scaling(m.inputs, first.inputs) and (m.outputs is None) == (first.outputs is None)
               for m, r in zip(models, readouts))
    if not same or len(set(names)) != len(names) or not set(names) <= set(first.feature_names):
        raise ValueError(f"joint_forecast: expected one-step linear forecasts of distinct input channels over one "
                         f"reservoir, states and inputs, got targets {names}.")
    if kind == "ridge":
        readout = Readout("ridge", np.concatenate([r.weights for r in readouts]))
    else:
        readout = Readout("dense", np.concatenate([r.weights for r in readouts], axis=1),
                          np.concatenate([r.bias for r in readouts]), "identity", readouts[0].standardization)
    outputs = None if first.outputs is None else Standardization(
        np.concatenate([m.outputs.mean for m in models]), np.concatenate([m.outputs.scale for m in models]))
    return dataclasses.replace(first, members=(dataclasses.replace(first.members[0], readout=readout),),
                               label_names=tuple(n for m in models for n in m.label_names), outputs=outputs,
                               stats=None, metrics={}, channels=names)


def _same_reservoir(a: ReservoirWeights, b: ReservoirWeights) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ("kernel", "recurrent", "bias", "gain")) and \
        (a.leaky, a.layers, a.readout_from, a.activation) == (b.leaky, b.layers, b.readout_from, b.activation)


def _same_scaling(a: Standardization | None, b: Standardization | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a.mean, b.mean)
                                         and np.array_equal(a.scale, b.scale))
