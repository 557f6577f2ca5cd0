"""tff_esn — federated Echo State Networks on TensorFlow Federated.

Importing the package imports nothing heavy and changes nothing in the process: the exports load on
first use (PEP 562), and TFF is loaded through ``tff_esn.runtime.load_tff()``.
"""

from __future__ import annotations

from tff_esn.common.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "ReservoirConfig": "tff_esn.esn.hyperparameters", "connectivity_from_count": "tff_esn.esn.hyperparameters",
    "Reservoir": "tff_esn.esn.layer", "spectral_radius": "tff_esn.esn.draws",
    "RidgeStats": "tff_esn.esn.ridge",
    "resolve_run": "tff_esn.registry.algorithms", "run_algorithm": "tff_esn.registry.algorithms",
    "RunRequest": "tff_esn.registry.launch", "launch": "tff_esn.registry.launch",
    "ESNClassifier": "tff_esn.registry.estimators", "ESNRegressor": "tff_esn.registry.estimators",
    "ESNForecaster": "tff_esn.registry.estimators",
    "Model": "tff_esn.esn.model", "ModelFormatError": "tff_esn.esn.model",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
