"""The echo state network every algorithm stands on: the reservoir and the ridge readout.

* :mod:`~tff_esn.esn.hyperparameters` — :class:`ReservoirConfig` and the per-client seeds;
* :mod:`~tff_esn.esn.topologies` — the graphs Ŵ can follow and their metrics;
* :mod:`~tff_esn.esn.draws` — the seeded draws of W_in, Ŵ (of every topology), b and the leaking rates;
* :mod:`~tff_esn.esn.weights` — :class:`ReservoirWeights` (the arrays) and :class:`StateSpec`
  (which states a readout sees);
* :mod:`~tff_esn.esn.states_numpy` — the state equation and the per-client harvest in numpy;
* :mod:`~tff_esn.esn.states_tf` — the state equation and the chunked harvest in TensorFlow;
* :mod:`~tff_esn.esn.ridge` — :class:`RidgeStats` (IncFed eqs. 6–12), the numpy ``(Yᵀ S, Sᵀ S)``
  reduction, the solve and the prediction;
* :mod:`~tff_esn.esn.ridge_tf` — the TensorFlow ``(Yᵀ S, Sᵀ S)`` reduction;
* :mod:`~tff_esn.esn.layer` — the Keras :class:`Reservoir` layer.

Nothing here imports an algorithm, ``privacy``, ``federated`` or ``closed_form``. The exports
below load on first use, so importing the package (or its numpy modules) imports no TensorFlow.
"""

from __future__ import annotations

from tff_esn.lazy import lazy_exports

_EXPORTS = {
    "STATE_MODES": ".hyperparameters", "ReservoirConfig": ".hyperparameters", "TOPOLOGIES": ".hyperparameters",
    "child_seed": ".hyperparameters", "client_reservoir": ".hyperparameters",
    "connectivity_from_count": ".hyperparameters",
    "bias_weights": ".draws", "input_weights": ".draws", "leak_rates": ".draws", "recurrent_weights": ".draws",
    "spectral_radius": ".draws", "graph_metrics": ".topologies",
    "ReservoirWeights": ".weights", "StateSpec": ".weights",
    "RidgeStats": ".ridge", "SingularSystemError": ".ridge", "predict": ".ridge",
    "Reservoir": ".layer",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
