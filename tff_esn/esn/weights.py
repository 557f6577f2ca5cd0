"""The arrays of one reservoir and which of its states a readout sees (IncFed eq. 1, FedIP eq. 1)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from tff_esn.esn.draws import activations, bias_weights, input_weights, leak_rates, recurrent_weights
from tff_esn.esn.hyperparameters import STATE_MODES, ReservoirConfig
from tff_esn.common.validation import check_field, is_count

if TYPE_CHECKING:
    from tff_esn.esn.layer import Reservoir


@dataclasses.dataclass(frozen=True, eq=False)
class ReservoirWeights:
    """One reservoir's float32 weights, leaking rate(s), deep layers and activation (IncFed eq. 1, FedIP eq. 1)."""

    kernel: np.ndarray
    recurrent: np.ndarray
    bias: np.ndarray
    gain: np.ndarray
    leaky: float | tuple[float, ...]
    layers: tuple[int, ...] = ()
    readout_from: int = 0
    activation: str | tuple[str, ...] = "tanh"

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("kernel", "recurrent", "bias", "gain"):
            arr = np.array(getattr(self, name), dtype=np.float32)  # an own copy, read-only: :attr:`key` holds
            arr.flags.writeable = False
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"ReservoirWeights.{name}: contains NaN or inf.")
            arrays[name] = arr
        units = arrays["recurrent"].shape[0] if arrays["recurrent"].ndim == 2 else -1
        shapes = {"kernel": (arrays["kernel"].shape[0] if arrays["kernel"].ndim == 2 else -1, units),
                  "recurrent": (units, units), "bias": (units,), "gain": (units,)}
        for name, arr in arrays.items():
            if units < 1 or arr.shape != shapes[name]:
                raise ValueError(f"ReservoirWeights.{name}: expected shape {shapes[name]}, got {arr.shape}.")
            object.__setattr__(self, name, arr)
        if np.ndim(self.leaky):
            object.__setattr__(self, "leaky", tuple(float(a) for a in np.ravel(self.leaky)))
        object.__setattr__(self, "layers", tuple(int(n) for n in self.layers) if len(self.layers) > 1 else ())
        if not isinstance(self.activation, str):
            object.__setattr__(self, "activation", tuple(self.activation))

    @classmethod
    def from_config(cls, config: ReservoirConfig, n_inputs: int) -> "ReservoirWeights":
        """The reservoir ``config`` draws for ``n_inputs`` inputs, gain 1 (the last few draws kept, read-only)."""
        return _drawn(cls, config, n_inputs)

    @classmethod
    def from_layer(cls, layer: "Reservoir") -> "ReservoirWeights":
        """The weights of a built :class:`~tff_esn.esn.layer.Reservoir` (gain 1 without ``use_gain``)."""
        gain = layer.gain.numpy() if layer.gain is not None else np.ones(layer.units, np.float32)
        config = layer.reservoir_config
        return cls(layer.kernel.numpy(), layer.recurrent_kernel.numpy(), layer.bias.numpy(), gain, layer.leaky,
                   config.layer_sizes, config.readout_from, activations(config))

    @property
    def units(self) -> int:
        return int(self.recurrent.shape[0])

    @property
    def readout_units(self) -> int:
        """The state features the readout sees (units from ``readout_from`` on)."""
        return self.units - self.readout_from

    @property
    def n_inputs(self) -> int:
        return int(self.kernel.shape[0])

    @functools.cached_property
    def key(self) -> str:
        """Content hash of the (read-only) arrays, hashed once: the cache key of a harvest."""
        h = hashlib.sha1(np.asarray(self.leaky, np.float64).tobytes())
        for arr in (self.kernel, self.recurrent, self.bias, self.gain):
            h.update(arr.tobytes())
        if self.layers:
            h.update(np.asarray(self.layers + (self.readout_from,) * bool(self.readout_from), np.int64).tobytes())
        if self.activation != "tanh":
            h.update(repr(self.activation).encode())
        return h.hexdigest()

    def replace(self, **changes: Any) -> "ReservoirWeights":
        return dataclasses.replace(self, **changes)

    def layer_weights(self) -> list[np.ndarray]:
        """Weights in :class:`~tff_esn.esn.layer.Reservoir` order (with ``use_gain=True``)."""
        return [self.kernel, self.recurrent, self.bias, self.gain]


@functools.lru_cache(maxsize=4)
def _drawn(cls: type[ReservoirWeights], config: ReservoirConfig, n_inputs: int) -> ReservoirWeights:
    if config.layers > 1:
        return _deep(cls, config, n_inputs)
    return cls(input_weights(config, n_inputs), recurrent_weights(config), bias_weights(config),
               np.ones(config.units, np.float32), leak_rates(config), activation=activations(config))


def _deep(cls: type[ReservoirWeights], config: ReservoirConfig, n_inputs: int) -> ReservoirWeights:
    """A deep ESN's layers in one block matrix: Ŵ_l on the diagonal, W_in^l from layer l − 1 above it."""
    layers = [config.layer(i) for i in range(config.layers)]
    sizes = [layer.units for layer in layers]
    total = sum(sizes)
    kernel = np.zeros((n_inputs, total), np.float32)
    kernel[:, :sizes[0]] = input_weights(layers[0], n_inputs)
    recurrent = np.zeros((total, total), np.float32)
    start, below = 0, None
    for layer in layers:
        unit = slice(start, start + layer.units)
        recurrent[unit, unit] = recurrent_weights(layer)
        if below is not None:
            recurrent[below, unit] = input_weights(layer, below.stop - below.start)
        start, below = unit.stop, unit
    return cls(kernel, recurrent, np.concatenate([bias_weights(layer) for layer in layers]),
               np.ones(total, np.float32), leak_rates(config), tuple(sizes), config.readout_from, activations(config))


@dataclasses.dataclass(frozen=True)
class StateSpec:
    """Which states the readout sees: ``state_mode``, ``washout``, the readout bias input and, with ``raw_inputs``,
    the input u(t) beside the state: rows ``[u(t), x(t)]``, read (each step, mean or last) as the states are."""

    state_mode: str = "all"
    washout: int = 0
    readout_bias: bool = True
    raw_inputs: bool = False

    def __post_init__(self) -> None:
        check_field(self, "state_mode", self.state_mode in STATE_MODES, f"one of {STATE_MODES}")
        check_field(self, "washout", is_count(self.washout, 0), "an integer ≥ 0")
        check_field(self, "raw_inputs", isinstance(self.raw_inputs, bool), "True or False")

    def width(self, weights: ReservoirWeights) -> int:
        """Columns of a state row the readout sees: the inputs (with ``raw_inputs``), then the readout units."""
        return weights.readout_units + (weights.n_inputs if self.raw_inputs else 0)

    def check(self, steps: int, per_step: bool) -> None:
        """Rejects a washout as long as the (shortest) sequence, and per-step labels with ``"mean"``."""
        if self.state_mode != "last" and self.washout >= steps:
            raise ValueError(f"washout: must be shorter than the shortest sequence ({steps} steps), "
                             f"got {self.washout}.")
        if per_step and self.state_mode == "mean":
            raise ValueError("state_mode: 'mean' needs one label per sequence; these labels are per step "
                             "(use 'all' or 'last').")
