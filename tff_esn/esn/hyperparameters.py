"""Reservoir hyperparameters as a frozen, validated dataclass."""

from __future__ import annotations

import dataclasses
from typing import Any

from tff_esn.common import streams
from tff_esn.common.validation import SEED_MAX, check_field, is_count, is_finite, is_seed

#: The graphs of Ŵ (:mod:`tff_esn.esn.topologies` builds them).
TOPOLOGIES = ("random", "ring", "delay-line", "cycle-jumps", "small-world", "scale-free")

#: How leaking rates spread over the units (:func:`tff_esn.esn.draws.leak_rates`).
LEAK_DISTRIBUTIONS = ("constant", "uniform", "log-uniform", "layered")

#: The units' nonlinearities f (esnfed's): ``mixed`` gives each unit one of ``activation_types``.
ACTIVATIONS = ("tanh", "sigmoid", "sin", "relu", "identity")

#: The signs of the fixed-weight topologies' links: all positive, or each ±1 at random (esnfed's ring).
LINK_SIGNS = ("positive", "random")

#: Which layers of a deep ESN the readout sees: every layer's state concatenated, or the last layer's.
READOUT_LAYERS = ("all", "last")

#: Which states enter a readout: every step after the washout (``all``), the ``last`` or their ``mean``.
STATE_MODES = ("last", "mean", "all")


def leak_values_from_text(text: str) -> tuple[float, ...]:
    """Leaking rates from a comma list (``0.9,0.5,…``) or a ``.npy`` file of a 1-D array."""
    if not text.endswith(".npy"):
        return tuple(float(a) for a in text.split(",")) if text else ()
    import numpy as np

    try:
        values = np.load(text, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read the leaking rates from {text}: {err}") from None
    if values.ndim != 1:
        raise ValueError(f"{text}: expected a 1-D array of leaking rates, got shape {values.shape}")
    return tuple(float(a) for a in values)


@dataclasses.dataclass(frozen=True)
class ReservoirConfig:
    """Hyperparameters of a leaky-integrator reservoir (IncFed eq. 1, thesis eq. 2.1).

    ``x(t) = (1 − a)·x(t−1) + a·tanh(g ⊙ (W_in u(t) + Ŵ x(t−1)) + b)``, ``x(0) = 0``.

    Attributes:
        units: number of reservoir units N_R (≥ 1).
        spectral_radius: ρ(Ŵ), the largest absolute *eigenvalue* of the recurrent
            matrix after rescaling (> 0; < 1 for the echo state property in general).
        leaky: leaking rate a ∈ (0, 1]; 1 means no leaky integration.
        input_scaling: W_in entries are uniform in [−input_scaling, input_scaling] (> 0).
        input_connectivity: fraction in (0, 1] of the inputs each unit receives; every
            unit receives exactly ``max(1, round(input_connectivity · N_U))`` inputs.
            The IncFed paper's tables give a count of connections per unit: convert with
            :func:`connectivity_from_count`.
        recurrent_connectivity: fraction in (0, 1] of the units each unit receives from,
            exactly ``max(1, round(recurrent_connectivity · N_R))`` per unit.
        bias_scaling: bias b uniform in [−bias_scaling, bias_scaling] (≥ 0; 0 = no bias,
            the papers' setting).
        seed: seed of every random draw of the reservoir (non-negative integer).
        topology: the graph of Ŵ, one of random, ring, delay-line, cycle-jumps, small-world,
            scale-free (tff_esn.esn.topologies); recurrent_connectivity applies to random only.
        neighbours: small-world: lattice neighbours k of each unit (even, 2 ≤ k < units).
        rewiring: small-world: probability p in [0, 1] that a lattice edge is rewired.
        attachment: scale-free: links m each new unit makes (1 ≤ m < units).
        jump: cycle-jumps: the jump size ℓ (2 ≤ ℓ < units).
        jump_weight: cycle-jumps: a jump's weight relative to a cycle link (> 0), before Ŵ is
            scaled to the spectral radius.
        leak_distribution: per-unit leaking rates: constant (every unit leaky), uniform or
            log-uniform in [leak_low, leaky], or layered (leak_layers contiguous blocks of rates
            from leaky down to leak_low).
        leak_values: every unit's leaking rate, explicitly (one per unit of every layer, each in
            (0, 1]; from the command line a comma list or a .npy file); empty: the distribution's.
        leak_low: the smallest leaking rate of a per-unit distribution, in (0, leaky].
        leak_layers: layered: the number of blocks (≥ 1).
        layers: reservoirs stacked into a deep ESN (≥ 1): layer l is driven by layer l − 1's state
            at the same step and the readout sees every layer's state, concatenated.
        layer_units: units of each layer (one value per layer; empty: units for every layer).
        layer_spectral_radius: ρ of each layer's Ŵ (empty: spectral_radius for every layer).
        layer_leaky: leaking rate of each layer (empty: leaky for every layer).
        layer_input_scaling: scaling of each layer's input weights (empty: input_scaling for
            every layer).
        activation: the units' nonlinearity f in place of tanh (tanh, sigmoid, sin, relu, identity), or
            mixed: each unit one of activation_types, drawn uniformly (esnfed's mixed_activations).
        activation_types: the nonlinearities a mixed reservoir draws from.
        link_signs: ring, delay-line and cycle-jumps: every link positive, or each link's sign ±1 at
            random (esnfed's ring_reservoir).
        readout_layers: the states a deep ESN's readout sees: every layer's, concatenated (all),
            or the last layer's (last).
    """

    units: int = 100
    spectral_radius: float = 0.9
    leaky: float = 1.0
    input_scaling: float = 1.0
    input_connectivity: float = 1.0
    recurrent_connectivity: float = 1.0
    bias_scaling: float = 0.0
    seed: int = 0
    topology: str = dataclasses.field(default="random", metadata={"choices": TOPOLOGIES})
    neighbours: int = 6
    rewiring: float = 0.1
    attachment: int = 3
    jump: int = 4
    jump_weight: float = 0.5
    leak_distribution: str = dataclasses.field(default="constant", metadata={"choices": LEAK_DISTRIBUTIONS})
    leak_values: tuple[float, ...] = dataclasses.field(
        default=(), metadata={"type": leak_values_from_text, "metavar": "A1,A2,…|PATH.npy"})
    leak_low: float = 0.1
    leak_layers: int = 3
    layers: int = 1
    layer_units: tuple[int, ...] = ()
    layer_spectral_radius: tuple[float, ...] = ()
    layer_leaky: tuple[float, ...] = ()
    layer_input_scaling: tuple[float, ...] = ()
    activation: str = dataclasses.field(default="tanh", metadata={"choices": (*ACTIVATIONS, "mixed")})
    activation_types: tuple[str, ...] = ("tanh", "sigmoid", "sin")
    link_signs: str = dataclasses.field(default="positive", metadata={"choices": LINK_SIGNS})
    readout_layers: str = dataclasses.field(default="all", metadata={"choices": READOUT_LAYERS})

    def __post_init__(self) -> None:
        check_field(self, "units", is_count(self.units, 1), "an integer ≥ 1")
        check_field(self, "spectral_radius", is_finite(self.spectral_radius) and self.spectral_radius > 0,
                    "a finite number > 0")
        check_field(self, "leaky", is_finite(self.leaky) and 0 < self.leaky <= 1, "a number in (0, 1]")
        check_field(self, "input_scaling", is_finite(self.input_scaling) and self.input_scaling > 0,
                    "a finite number > 0")
        for name in ("input_connectivity", "recurrent_connectivity"):
            check_field(self, name, is_finite(getattr(self, name)) and 0 < getattr(self, name) <= 1,
                        "a fraction in (0, 1] (use connectivity_from_count for a count per unit)")
        check_field(self, "bias_scaling", is_finite(self.bias_scaling) and self.bias_scaling >= 0,
                    "a finite number ≥ 0")
        check_field(self, "seed", is_seed(self.seed), f"an integer in [0, {SEED_MAX}]")
        check_field(self, "topology", self.topology in TOPOLOGIES, f"one of {', '.join(TOPOLOGIES)}")
        check_field(self, "neighbours", is_count(self.neighbours, 2) and self.neighbours % 2 == 0
                    and (self.topology != "small-world" or self.neighbours < self.units),
                    "an even integer ≥ 2 (and < units for small-world)")
        check_field(self, "rewiring", is_finite(self.rewiring) and 0 <= self.rewiring <= 1, "a probability in [0, 1]")
        check_field(self, "attachment", is_count(self.attachment, 1)
                    and (self.topology != "scale-free" or self.attachment < self.units),
                    "an integer ≥ 1 (and < units for scale-free)")
        check_field(self, "jump", is_count(self.jump, 2) and (self.topology != "cycle-jumps" or self.jump < self.units),
                    "an integer ≥ 2 (and < units for cycle-jumps)")
        check_field(self, "jump_weight", is_finite(self.jump_weight) and self.jump_weight > 0, "a finite number > 0")
        check_field(self, "leak_distribution", self.leak_distribution in LEAK_DISTRIBUTIONS,
                    f"one of {', '.join(LEAK_DISTRIBUTIONS)}")
        check_field(self, "leak_low", is_finite(self.leak_low) and 0 < self.leak_low <= self.leaky,
                    "a number in (0, leaky]")
        check_field(self, "leak_layers", is_count(self.leak_layers, 1), "an integer ≥ 1")
        check_field(self, "layers", is_count(self.layers, 1), "an integer ≥ 1")
        check_field(self, "readout_layers", self.readout_layers in READOUT_LAYERS, f"one of {', '.join(READOUT_LAYERS)}")
        check_field(self, "activation", self.activation in (*ACTIVATIONS, "mixed"), f"one of {', '.join(ACTIVATIONS)}, mixed")
        object.__setattr__(self, "activation_types", tuple(self.activation_types))
        check_field(self, "activation_types", bool(self.activation_types) and set(self.activation_types) <= set(ACTIVATIONS),
                    f"one or more of {', '.join(ACTIVATIONS)}")
        check_field(self, "link_signs", self.link_signs == "positive" or self.link_signs == "random"
                    and self.topology in ("ring", "delay-line", "cycle-jumps"),
                    "positive, or random for the ring, delay-line and cycle-jumps topologies")
        for name in PER_LAYER:
            values = getattr(self, name)
            if isinstance(values, list):
                object.__setattr__(self, name, values := tuple(values))
            check_field(self, name, isinstance(values, tuple) and (not values or self.layers > 1 and len(values) == self.layers),
                        f"one value per layer of a deep ESN (layers = {self.layers}), or none for the single-layer setting")
        if isinstance(self.leak_values, list):
            object.__setattr__(self, "leak_values", tuple(self.leak_values))
        check_field(self, "leak_values", not self.leak_values or (
            len(self.leak_values) == self.total_units and self.leak_distribution == "constant"
            and all(is_finite(a) and 0 < a <= 1 for a in self.leak_values)),
            f"one leaking rate in (0, 1] per unit ({self.total_units}), with the constant leak_distribution")
        for index in range(self.layers if self.layers > 1 else 0):  # each layer's settings, by layer
            try:
                self.layer(index)
            except ValueError as err:
                raise ValueError(f"layer {index + 1} of {self.layers} (the layer_* settings): {err}") from None

    @property
    def total_units(self) -> int:
        """The units of every layer together."""
        return sum(self.layer_sizes) or self.units

    @property
    def readout_from(self) -> int:
        """The first unit the readout sees: the last layer's first unit with ``readout_layers="last"``, else 0."""
        return sum(self.layer_sizes[:-1]) if self.readout_layers == "last" else 0

    @property
    def readout_units(self) -> int:
        """The state features the readout sees (the units from :attr:`readout_from` on)."""
        return self.total_units - self.readout_from

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """The units of each layer of a deep ESN; ``()`` for one reservoir (``ReservoirWeights.layers``)."""
        return (tuple(self.layer_units) or (self.units,) * self.layers) if self.layers > 1 else ()

    def layer(self, index: int) -> "ReservoirConfig":
        """Layer ``index``'s own reservoir in a deep ESN, seeded by stream ``reservoir.deep_layer`` after the first."""
        own = {name[len("layer_"):]: getattr(self, name)[index] for name in PER_LAYER if getattr(self, name)}
        seed = self.seed if index == 0 else streams.DEEP_LAYER.seed(self.seed, index)
        start = sum(self.layer_sizes[:index])
        rates = self.leak_values[start:start + self.layer_sizes[index]] if self.leak_values else ()
        return self.replace(layers=1, seed=seed, leak_values=rates, **own, **{name: () for name in PER_LAYER})

    def replace(self, **changes: Any) -> "ReservoirConfig":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ReservoirConfig":
        """Builds a config from a dict, rejecting unknown keys by name."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"ReservoirConfig: unknown field(s) {unknown}; known fields are {sorted(known)}.")
        return cls(**values)


PER_LAYER = ("layer_units", "layer_spectral_radius", "layer_leaky", "layer_input_scaling")
"""The deep ESN's per-layer settings: ``layer_X`` is ``X`` of each layer."""

def connectivity_from_count(count: int, fan_in: int) -> float:
    """Fraction of connections per unit from a count ≥ 1 of ``fan_in`` (IncFed Tables I–IV), capped at 1."""
    return min(1.0, count / fan_in)


def client_reservoir(config: ReservoirConfig, index: int) -> ReservoirConfig:
    """Client ``index``'s own reservoir (thesis Table 6.5): the seed of stream ``reservoir.client``."""
    if not is_count(index, 0):
        raise ValueError(f"index: expected an integer ≥ 0, got {index!r}.")
    return config.replace(seed=streams.CLIENT_RESERVOIR.seed(config.seed, index))
