"""A :class:`~tff_esn.esn.model.Model` as reservoirpy nodes and back: a ``Reservoir`` and a ``Ridge`` readout.

reservoirpy's state equation ``x(t) = (1 − lr)·x(t−1) + lr·f(W_in u(t) + W x(t−1) + b)`` (column vectors) is ours
(IncFed eq. 1; FedIP eq. 1 with gains g) with ``W_in = (g ⊙ W_inᵀ)``, ``W = (Ŵ g)ᵀ``: IP gains and the input
standardisation ``(u − μ)/σ`` fold into ``W_in`` and ``b``; per-unit leaking rates are its array ``lr``. Its ``Ridge``
is ``s Wout + bias``, our ``[s, 1] Wᵀ``. Deep reservoirs, per-unit nonlinearities, ensembles, dense readouts and
readouts of the inputs beside the states have no such nodes and are refused. Written for reservoirpy 0.4's nodes;
0.3's (which take ``bias`` as a column and the readout's ``output_dim``) are read and made the same way.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from tff_esn.esn.weights import ReservoirWeights

if TYPE_CHECKING:
    from tff_esn.esn.model import Model

ACTIVATIONS = ("tanh", "sigmoid", "relu", "identity")
"""The nonlinearities both libraries name alike."""


@dataclasses.dataclass(frozen=True)
class ReservoirpyESN:
    """A model's reservoirpy ``reservoir`` and ridge ``readout`` and the states the readout sees: the ``last``,
    the ``mean`` after ``washout``, or ``all`` after ``washout`` (one output per step)."""

    reservoir: Any
    readout: Any
    state_mode: str
    washout: int = 0

    def run(self, x: Any, lengths: Any = None) -> np.ndarray:
        """The readout's outputs on sequences (an (n, T, F) array with optional ``lengths``, or a list of (T_i, F)
        arrays), each run from the zero state, one row per sequence (per step with ``all``):
        :meth:`Model.decision_function`'s rows."""
        if isinstance(x, (list, tuple)):
            sequences = [np.asarray(s, np.float64) for s in x]
        else:
            x = np.asarray(x, np.float64)
            steps = np.full(len(x), x.shape[1]) if lengths is None else np.asarray(lengths)
            sequences = [s[:n] for s, n in zip(x, steps)]
        rows = []
        for sequence in sequences:
            if getattr(self.reservoir, "initialized", True):  # a 0.4 node not run yet is at zero and has no state
                self.reservoir.reset()
            states = np.asarray(self.reservoir.run(sequence))
            if self.state_mode == "last":
                states = states[-1:]
            elif self.state_mode == "mean":
                states = states[self.washout:].mean(axis=0, keepdims=True)
            else:
                states = states[self.washout:]
            rows.append(np.asarray(self.readout.run(states)))
        return np.concatenate(rows)


def _modern() -> bool:
    """Whether the installed reservoirpy has 0.4's nodes (bias vectors, not columns)."""
    import reservoirpy

    major, minor = (int(v) for v in reservoirpy.__version__.split(".")[:2])
    return (major, minor) >= (0, 4)


def to_reservoirpy(model: Model) -> ReservoirpyESN:
    """``model``'s reservoir and ridge readout as reservoirpy nodes (module docstring); ``ValueError`` (one line) for
    what reservoirpy has no node of, ``ImportError`` without reservoirpy (``pip install tff_esn[reservoirpy]``)."""
    if len(model.members) > 1:
        raise ValueError("to_reservoirpy: an ensemble has several reservoirs and readouts; reservoirpy's Reservoir + "
                         "Ridge hold one (export each member's model, or use to_keras).")
    member = model.members[0]
    weights, readout = member.reservoir, member.readout
    if readout.kind != "ridge":
        raise ValueError("to_reservoirpy: a dense (logistic/softmax) readout has no reservoirpy Ridge node; use "
                         "to_keras.")
    if model.spec.raw_inputs:
        raise ValueError("to_reservoirpy: this readout sees the inputs beside the states; reservoirpy's Reservoir + "
                         "Ridge pair feeds the Ridge the states only; use to_keras.")
    if weights.layers:
        raise ValueError("to_reservoirpy: a deep reservoir's layers have no single reservoirpy Reservoir node; use "
                         "to_keras.")
    if not isinstance(weights.activation, str) or weights.activation not in ACTIVATIONS:
        raise ValueError(f"to_reservoirpy: nonlinearity {weights.activation!r}: reservoirpy's Reservoir takes one of "
                         f"{', '.join(ACTIVATIONS)} for every unit; use to_keras.")
    try:
        from reservoirpy.nodes import Reservoir, Ridge
    except ImportError as err:
        raise ImportError(f"to_reservoirpy: reservoirpy is not installed ({err}); pip install "
                          "'tff_esn[reservoirpy]'.") from None
    gain = weights.gain.astype(np.float64)
    kernel = weights.kernel.astype(np.float64) * gain
    bias = weights.bias.astype(np.float64)
    if model.inputs is not None:
        mean, scale = model.inputs.mean.astype(np.float64), model.inputs.scale.astype(np.float64)
        bias = bias - (mean / scale) @ kernel
        kernel = kernel / scale[:, None]
    leaky = np.asarray(weights.leaky, np.float64)
    modern = _modern()
    reservoir = Reservoir(units=weights.units, lr=leaky if leaky.ndim else float(leaky),
                          W=(weights.recurrent.astype(np.float64) * gain).T, Win=kernel.T,
                          bias=bias if modern else bias[:, None], activation=weights.activation)
    ridge = readout.weights
    units = weights.readout_units
    out_bias = ridge[:, units] if model.spec.readout_bias else np.zeros(len(ridge))
    node = Ridge(output_dim=len(ridge), Wout=np.ascontiguousarray(ridge[:, :units].T), bias=out_bias)
    spec = model.spec
    mode = "all" if model.per_step and spec.state_mode == "all" else "last" if spec.state_mode == "last" else "mean"
    return ReservoirpyESN(reservoir, node, mode, spec.washout)


def _array(value: Any, what: str) -> np.ndarray:
    if callable(value) or value is None:
        raise ValueError(f"from_reservoirpy: the {what} is not drawn yet; run or fit the nodes once first.")
    return np.asarray(value.toarray() if hasattr(value, "toarray") else value, np.float64)


def read_nodes(reservoir: Any, readout: Any) -> tuple[ReservoirWeights, np.ndarray]:
    """The reservoir weights and ridge readout ``[Woutᵀ, bias]`` (N_Y, N + 1) of a reservoirpy ``reservoir`` and
    ``Ridge`` ``readout``; ``ValueError`` for a reservoir of another equation (noise, feedback,
    ``equation="external"``, a nonlinearity not in :data:`ACTIVATIONS`) or nodes not drawn yet."""
    W, Win = _array(getattr(reservoir, "W", None), "reservoir's W"), _array(getattr(reservoir, "Win", None), "Win")
    bias = _array(getattr(reservoir, "bias", 0.0), "reservoir's bias").reshape(-1)
    if bias.size == 1:
        bias = np.full(W.shape[0], bias[0])
    reasons = [f"{n} {getattr(reservoir, n)}" for n in ("noise_in", "noise_rc", "noise_out")
               if float(getattr(reservoir, n, 0.0) or 0.0)]
    if getattr(getattr(reservoir, "_forward", None), "__name__", "") == "forward_external":
        reasons.append('equation="external"')
    if getattr(reservoir, "has_feedback", False):
        reasons.append("feedback")
    if reasons:
        raise ValueError(f"from_reservoirpy: the reservoir's {', '.join(reasons)} is not IncFed eq. 1's state "
                         "equation; build it without.")
    activation = getattr(reservoir.activation, "__name__", str(reservoir.activation))
    if activation not in ACTIVATIONS:
        raise ValueError(f"from_reservoirpy: nonlinearity {activation!r}; one of {', '.join(ACTIVATIONS)} maps.")
    Wout, out_bias = _array(getattr(readout, "Wout", None), "readout's Wout"), _array(readout.bias, "readout's bias")
    if Wout.shape[0] != W.shape[0]:
        raise ValueError(f"from_reservoirpy: the readout takes {Wout.shape[0]} inputs, the reservoir has "
                         f"{W.shape[0]} units.")
    lr = np.asarray(reservoir.lr, np.float64).reshape(-1)
    weights = ReservoirWeights(Win.T, W.T, bias, np.ones(W.shape[0]), float(lr[0]) if lr.size == 1 else tuple(lr),
                               activation=activation)
    return weights, np.concatenate([Wout.T, out_bias.reshape(-1, 1)], axis=1)
