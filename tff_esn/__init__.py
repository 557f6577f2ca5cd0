"""tff_esn — federated Echo State Networks on TensorFlow Federated.

Importing the package imports nothing heavy and changes nothing in the process: the exports load on
first use (PEP 562), and TFF is loaded through ``tff_esn.runtime.load_tff()``.
"""

from __future__ import annotations

from tff_esn.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "ReservoirConfig": "tff_esn.esn.hyperparameters", "connectivity_from_count": "tff_esn.esn.hyperparameters",
    "Reservoir": "tff_esn.esn.layer", "spectral_radius": "tff_esn.esn.draws",
    "RidgeStats": "tff_esn.esn.ridge",
}
__all__ = ["ReservoirConfig", "Reservoir", "RidgeStats", "connectivity_from_count", "spectral_radius"]
__getattr__ = lazy_exports(__name__, _EXPORTS)
