"""L2-regularised logistic regression in numpy/scipy: the baselines' classifier (scikit-learn's
``LogisticRegression(C=1, solver="lbfgs")`` objective, without importing its estimator stack).

With K ≥ 3 classes the model is multinomial: class scores ``z_i = W x_i + b`` (W: K × F, b: K), softmax
cross-entropy ``ℓ_i = log Σ_k exp z_ik − z_i,y_i``; with two classes one vector, ``z_i = w·x_i + b`` and the
logistic loss ``ℓ_i = log(1 + exp z_i) − [y_i = 1] z_i``. Fitted by L-BFGS on
``(Σ_i s_i ℓ_i + ‖W‖²_F / (2C)) / Σ_i s_i`` — sample weights ``s_i`` (1, or ``n / (K n_{y_i})``
class-balanced), intercept unpenalised — to a projected gradient below ``gtol``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

GTOL = 1e-4
"""Largest projected gradient of the scaled objective at which L-BFGS stops (scikit-learn's default ``tol``)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Logistic:
    """A fitted logistic regression: the training ``classes``, ``weights`` (K × F; 1 × F for two classes) and
    ``intercept``."""

    classes: np.ndarray
    weights: np.ndarray
    intercept: np.ndarray

    def log_proba(self, x: np.ndarray) -> np.ndarray:
        """(n, K) log-probabilities of :attr:`classes` for rows ``x`` (n, F)."""
        from scipy.special import log_expit, log_softmax

        z = np.asarray(x, np.float64) @ self.weights.T + self.intercept
        if self.classes.size == 2:
            return np.stack([log_expit(-z[:, 0]), log_expit(z[:, 0])], axis=1)
        return log_softmax(z, axis=1)


def fit_logistic(x: np.ndarray, y: np.ndarray, *, c: float = 1.0, balanced: bool = False, max_iter: int = 2000,
                 gtol: float = GTOL) -> Logistic:
    """The logistic regression of the module's definition on rows ``x`` (n, F) and labels ``y`` (n,) of ≥ 2
    classes; ``balanced``: class-balanced sample weights."""
    from scipy.optimize import minimize
    from scipy.special import expit, logsumexp

    x = np.asarray(x, np.float64)
    classes, index = np.unique(np.asarray(y), return_inverse=True)
    if classes.size < 2 or x.ndim != 2 or x.shape[0] != index.size or not (np.isfinite(c) and c > 0):
        raise ValueError(f"fit_logistic: expected (n, F) rows, n labels of at least 2 classes and C > 0, got "
                         f"rows {x.shape}, {index.size} labels of {classes.size} classes, C = {c}.")
    n, features = x.shape
    weights = n / (classes.size * np.bincount(index))[index] if balanced else np.ones(n)
    total = weights.sum()
    binary = classes.size == 2
    rows = 1 if binary else classes.size
    target = (index == 1).astype(np.float64)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[:rows * features].reshape(rows, features)
        z = x @ w.T + theta[rows * features:]
        if binary:
            loss = np.logaddexp(0.0, z[:, 0]) - target * z[:, 0]
            residual = (expit(z[:, 0]) - target)[:, None]
        else:
            norm = logsumexp(z, axis=1)
            loss = norm - z[np.arange(n), index]
            residual = np.exp(z - norm[:, None])
            residual[np.arange(n), index] -= 1.0
        residual *= weights[:, None]
        value = (weights @ loss + 0.5 / c * np.sum(w * w)) / total
        gradient = np.concatenate([(residual.T @ x + w / c).ravel(), residual.sum(axis=0)]) / total
        return float(value), gradient

    result = minimize(objective, np.zeros(rows * (features + 1)), jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "gtol": gtol, "maxls": 50, "ftol": 64 * np.finfo(float).eps})
    theta = result.x
    return Logistic(classes, theta[:rows * features].reshape(rows, features), theta[rows * features:])
