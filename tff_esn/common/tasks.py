"""What a dataset asks a readout for: classes (``classify``) or real values (``forecast``, ``regress``).

A :class:`Task` decides the readout's training targets and a group's metrics. No numpy at import.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tff_esn.common.validation import check_field, is_count

TASK_KINDS = ("classify", "forecast", "regress")
REAL_KINDS = ("forecast", "regress")
REAL_OBJECTIVE = "neg_mse"
"""What every selection on a real-valued task maximises: minus the validation mean squared error."""


@dataclasses.dataclass(frozen=True)
class Task:
    """A dataset's task: ``classify``, ``forecast`` (channel ``target``, ``horizon`` H ≥ 1) or ``regress``."""

    kind: str = "classify"
    horizon: int = 0
    target: str | None = None

    def __post_init__(self) -> None:
        check_field(self, "kind", self.kind in TASK_KINDS, f"one of {TASK_KINDS}", flag="--task")
        forecast = self.kind == "forecast"
        check_field(self, "horizon", is_count(self.horizon, 1) if forecast else self.horizon == 0,
                    "an integer ≥ 1 with --task forecast (and 0 otherwise)", flag="--horizon")
        check_field(self, "target", self.target is None or (forecast and isinstance(self.target, str)),
                    "a channel name with --task forecast (and None otherwise)", flag="--target")

    @property
    def real(self) -> bool:
        """Whether the readout predicts real values (a mean-squared-error readout) rather than classes."""
        return self.kind in REAL_KINDS

    @property
    def products(self) -> str:
        """The float type of the ridge statistics' per-chunk products: float64 for real targets, float32 for classes."""
        return "float64" if self.real else "float32"

    def encode(self, y: Any, n_outputs: int) -> Any:
        """The readout's targets of labels ``y``: one-hot classes or real (…, 1) float64 (IncFed eq. 3's ``Y``)."""
        import numpy as np

        from tff_esn.esn.ridge import one_hot

        y = np.asarray(y)
        if self.real:
            return y.astype(np.float64)[..., None]
        return one_hot(y.reshape(-1), n_outputs).reshape(y.shape + (n_outputs,))

    def report(self, y_true: Any, outputs: Any, n_outputs: int, *, seed: int = 0) -> dict[str, Any]:
        """One group's ``metrics.json`` section: classification metrics, or NRMSE, RMSE, MAE and R² (NaN for the
        non-finite outputs of a diverged readout)."""
        import numpy as np

        from tff_esn.common import metrics

        if self.real:
            if not np.all(np.isfinite(outputs)):
                return {**dict.fromkeys(("nrmse", "rmse", "mae", "r2"), math.nan), "n": int(np.size(y_true))}
            return metrics.regression_metrics(y_true, outputs)
        return metrics.split_report(y_true, outputs, n_outputs, seed=seed)



CLASSIFY = Task()
