"""The echo state network every algorithm stands on: the reservoir and the ridge readout
(exports load on first use: importing the package imports no TensorFlow)."""

from __future__ import annotations

from tff_esn.common.lazy import lazy_exports

_EXPORTS = {
    "STATE_MODES": ".hyperparameters", "ReservoirConfig": ".hyperparameters", "TOPOLOGIES": ".hyperparameters",
    "child_seed": "tff_esn.common.streams", "client_reservoir": ".hyperparameters",
    "connectivity_from_count": ".hyperparameters",
    "bias_weights": ".draws", "input_weights": ".draws", "leak_rates": ".draws", "recurrent_weights": ".draws",
    "spectral_radius": ".draws", "graph_metrics": ".topologies",
    "ReservoirWeights": ".weights", "StateSpec": ".weights",
    "RidgeStats": ".ridge", "SingularSystemError": ".ridge", "predict": ".ridge",
    "Reservoir": ".layer",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
