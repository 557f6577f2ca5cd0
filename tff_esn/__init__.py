"""tff_esn — federated Echo State Networks on TensorFlow Federated.

The closed-form readouts run on numpy (the Keras reservoir layer imports TensorFlow); modules that
run federated computations load TFF through ``tff_esn.runtime.load_tff()``, which installs the
package's execution context in place of TFF's stock one and leaves a context the user installed
alone (:mod:`tff_esn.runtime` owns and stops the TFF worker processes). Importing the package
imports nothing heavy and changes nothing in the process: the exports below are loaded on
first use (PEP 562).
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
