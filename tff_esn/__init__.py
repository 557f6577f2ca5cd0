"""tff_esn — federated Echo State Networks on TensorFlow Federated.

The light core (reservoir, closed-form readouts) imports TensorFlow only; modules that
run federated computations use the installed TFF execution context and never install one:
entry points (the CLI, scripts, benches) or the user call ``tff_esn.runtime.ensure_context()``
(:mod:`tff_esn.runtime` owns and stops the TFF worker processes).
"""

import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tff_esn.config import ReservoirConfig, connectivity_from_count  # noqa: E402
from tff_esn.reservoir import Reservoir, spectral_radius  # noqa: E402
from tff_esn.ridge import RidgeStats  # noqa: E402

__version__ = "0.1.0"

__all__ = ["ReservoirConfig", "Reservoir", "RidgeStats", "connectivity_from_count", "spectral_radius"]
