"""scikit-learn estimators over the registered algorithms: :class:`ESNClassifier`, :class:`ESNRegressor` and
:class:`ESNForecaster`.

``fit(X, y, clients=None)`` trains ``algorithm`` (any registered one serving the task) on sequences — an (n, T, F)
array or a list of (T_i, F) arrays of unequal length — federated over ``clients`` (one id per sequence; none: one
client) through :func:`~tff_esn.registry.algorithms.resolve_run` and
:func:`~tff_esn.registry.algorithms.run_algorithm`, with every training client in the training group (the run carves
validation folds from them where it chooses λ, the state mode or the reservoir). ``model_`` is the trained
:class:`~tff_esn.esn.model.Model`. ``GridSearchCV(est, grid, cv=GroupKFold(k)).fit(X, y, groups=ids, clients=ids)``
keeps each client's sequences on one side of every fold and federates each fit over the training folds' clients.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target

from tff_esn.common.tasks import Task
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.model import Model, as_sequences
from tff_esn.registry.algorithms import RunRecord, resolve_run, run_algorithm

SOURCE = "estimator"
"""The data source name of an estimator's training data (own data: the algorithms' own-data defaults apply)."""
PARAMETERS = ("units", "spectral_radius", "leaky", "input_scaling", "l2", "state_mode", "washout", "seed")
"""The settings an estimator takes as parameters (``None``: the algorithm's own-data default); ``settings`` holds
any other setting of the algorithm by its flag name."""


def _sequences(X: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` as padded sequences and lengths; a 2-D table is refused (its rows could be steps or sequences)."""
    if not isinstance(X, (list, tuple)) and np.ndim(X) == 2:
        shape = np.shape(X)
        raise ValueError(f"X: a 2-D array {shape} is not sequences; give (n, T, F) (reshape to ({shape[0]}, "
                         f"{shape[1]}, 1) for univariate series of {shape[1]} steps, or ({shape[0]}, 1, {shape[1]}) "
                         "for one step of F features) or a list of (T_i, F) arrays.")
    return as_sequences(X)


class _ESNEstimator(BaseEstimator):
    """What both estimators share: the parameters, the training run and the model's outputs."""

    _task = Task()

    def _task_of(self) -> Task:
        """What the run's readout predicts."""
        return self._task

    def __init__(self, algorithm: str = "incfed", *, units: int | None = None, spectral_radius: float | None = None,
                 leaky: float | None = None, input_scaling: float | None = None, l2: float | str | None = None,
                 state_mode: str | None = None, washout: int | None = None, seed: int = 0,
                 settings: Mapping[str, Any] | None = None):
        self.algorithm = algorithm
        self.units = units
        self.spectral_radius = spectral_radius
        self.leaky = leaky
        self.input_scaling = input_scaling
        self.l2 = l2
        self.state_mode = state_mode
        self.washout = washout
        self.seed = seed
        self.settings = settings

    def _settings(self) -> dict[str, Any]:
        given = {name: getattr(self, name) for name in PARAMETERS if getattr(self, name) is not None}
        extra = dict(self.settings or {})
        both = sorted(set(given) & set(extra))
        if both:
            raise ValueError(f"settings: {both} are parameters of {type(self).__name__} too; set them once.")
        return {**extra, **given}

    def _targets(self, y: Any, n: int) -> tuple[np.ndarray, int, tuple[str, ...]]:
        """``y`` as the run's labels, the number of outputs and their names (sets the fitted label attributes)."""
        raise NotImplementedError

    def _inputs(self, x: np.ndarray, lengths: np.ndarray | None, y: Any
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, int, tuple[str, ...]]:
        """The run's inputs, their lengths, labels, number of outputs and output names."""
        return (x, lengths, *self._targets(y, len(x)))

    def fit(self, X: Any, y: Any = None, clients: Any = None) -> "_ESNEstimator":
        """Trains ``algorithm`` on the sequences ``X`` with labels ``y`` (n,), federated over ``clients`` (n,) ids."""
        x, lengths, labels, n_outputs, names = self._inputs(*_sequences(X), y)
        n = len(x)
        ids = np.zeros(n, np.int64) if clients is None else np.asarray(clients)
        if ids.shape != (n,):
            raise ValueError(f"clients: expected one client id per sequence ({n},), got shape {ids.shape}.")
        order = list(dict.fromkeys(ids.tolist()))
        data = {}
        for k, cid in enumerate(order):
            rows = np.flatnonzero(ids == cid)
            steps = None if lengths is None else lengths[rows]
            longest = x.shape[1] if steps is None else int(steps.max())
            data[f"c{k}"] = ClientSequences(x[rows, :longest], labels[rows], steps)
        dataset = SequenceDataset(data, n_outputs, tuple(f"x{j}" for j in range(x.shape[2])), names, SOURCE,
                                  task=self._task_of())
        run = resolve_run(self.algorithm, dataset, **self._settings())
        record = run_algorithm(run, dataset, Split(SOURCE, tuple(data), (), ()), test_required=False,
                               start=_start)
        if record.model is None:
            raise ValueError(f"algorithm {self.algorithm!r}: its run yields no model to predict with; use one that "
                             "does (centralized, incfed, …).")
        self.model_: Model = record.model
        self.record_: RunRecord = record
        self.n_features_in_ = x.shape[2]
        return self

    def _model(self) -> Model:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "model_")
        return self.model_


def _start(run: Any) -> None:
    """TFF's execution context for a run that executes TFF computations (a local worker)."""
    if run.tff:
        from tff_esn import runtime

        runtime.ensure_context(prestart=True)


def _has_probabilities(estimator: "ESNClassifier") -> bool:
    model = getattr(estimator, "model_", None)
    return model is not None and all(m.readout.kind == "dense" for m in model.members)


class ESNClassifier(ClassifierMixin, _ESNEstimator):
    """An ESN sequence classifier (one label per sequence) trained by a registered algorithm; ``classes_`` holds the
    labels as given (any hashable values), ``score`` is the accuracy (scikit-learn's classifier score)."""

    def _targets(self, y: Any, n: int) -> tuple[np.ndarray, int, tuple[str, ...]]:
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y: expected one label per sequence ({n},), got shape {y.shape}.")
        kind = type_of_target(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"y: {kind} values are not class labels; use ESNRegressor for real targets.")
        self.classes_, labels = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y: one class only ({self.classes_[0]!r}); a classifier needs two or more.")
        return labels.astype(np.int64), len(self.classes_), tuple(str(c) for c in self.classes_)

    def predict(self, X: Any) -> np.ndarray:
        """The predicted class of each sequence, as one of :attr:`classes_`."""
        indices = self._model().predict(X)
        return self.classes_[indices]

    def decision_function(self, X: Any) -> np.ndarray:
        """Per-class scores (n, K); for two classes (n,), positive for ``classes_[1]`` (scikit-learn's convention):
        a ridge readout's output difference, a dense readout's log-odds."""
        model = self._model()
        out = model.decision_function(X)
        if all(m.readout.kind == "dense" for m in model.members):
            with np.errstate(divide="ignore"):
                return np.log(out) - np.log1p(-out) if out.ndim == 1 else np.log(out)
        return out[:, 1] - out[:, 0] if out.shape[1] == 2 else out

    @available_if(_has_probabilities)
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (n, K) in :attr:`classes_` order (dense logistic or softmax readouts only)."""
        return self._model().predict_proba(X)


class ESNRegressor(RegressorMixin, _ESNEstimator):
    """An ESN regressor (one real target per sequence) trained by a registered algorithm that serves ``regress``;
    ``score`` is R² (scikit-learn's regressor score)."""

    _task = Task("regress")

    def _targets(self, y: Any, n: int) -> tuple[np.ndarray, int, tuple[str, ...]]:
        y = np.asarray(y, np.float64)
        if y.shape != (n,) or not np.all(np.isfinite(y)):
            raise ValueError(f"y: expected one finite real target per sequence ({n},), got shape {y.shape}"
                             f"{'' if y.shape != (n,) else ' with NaN or inf'}.")
        return y, 1, ("y",)

    def predict(self, X: Any) -> np.ndarray:
        """The predicted target of each sequence (n,)."""
        return self._model().predict(X)


class ESNForecaster(RegressorMixin, _ESNEstimator):
    """An ESN forecaster of channel ``target`` ``horizon`` steps ahead, trained on series (n, T, F) by a registered
    algorithm that serves ``forecast`` (``y`` is not given: the series are their own targets, ``x(t + H)``).
    ``predict`` forecasts at every step after the washout (or once per series, as the chosen state mode reads
    states), ``score`` is their R², ``generate`` runs the model free (its forecasts fed back as inputs)."""

    def __init__(self, algorithm: str = "incfed", *, horizon: int = 1, target: int = 0, units: int | None = None,
                 spectral_radius: float | None = None, leaky: float | None = None, input_scaling: float | None = None,
                 l2: float | str | None = None, state_mode: str | None = None, washout: int | None = None,
                 seed: int = 0, settings: Mapping[str, Any] | None = None):
        super().__init__(algorithm, units=units, spectral_radius=spectral_radius, leaky=leaky,
                         input_scaling=input_scaling, l2=l2, state_mode=state_mode, washout=washout, seed=seed,
                         settings=settings)
        self.horizon = horizon
        self.target = target

    def _task_of(self) -> Task:
        return Task("forecast", self.horizon, f"x{self.target}")

    def _inputs(self, x: np.ndarray, lengths: np.ndarray | None, y: Any
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, int, tuple[str, ...]]:
        if y is not None:
            raise ValueError("y: a forecaster's targets are its series' own later steps; call fit(X) (or fit(X, "
                             "None, clients=ids)).")
        inputs, truth = self._pairs(x, lengths)
        return inputs, None, truth, 1, (f"x{self.target}(t+{self.horizon})",)

    def _pairs(self, x: np.ndarray, lengths: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The inputs ``x(1…T − H)`` and the targets ``x_target(1 + H…T)`` of equally long series."""
        h, target = self.horizon, self.target
        if not isinstance(h, (int, np.integer)) or h < 1 or not isinstance(target, (int, np.integer)) \
                or not 0 <= target < x.shape[2]:
            raise ValueError(f"horizon, target: expected an integer horizon ≥ 1 and a channel index in [0, "
                             f"{x.shape[2]}), got {h!r}, {target!r}.")
        if lengths is not None or x.shape[1] <= h:
            raise ValueError(f"X: a forecaster takes series of one length longer than the horizon ({h}); cut them "
                             "to one length.")
        return x[:, :-h], x[:, h:, target].astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        """The forecasts ``x_target(t + H)`` from the series ``X`` read up to each step t (n, T − washout), or one
        forecast per series (n,) where the model reads the last state."""
        return self._model().predict(X)

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        """R² of the forecasts of ``X[:, :-H]`` against ``X``'s own target channel ``H`` steps later."""
        from sklearn.metrics import r2_score

        model = self._model()
        inputs, truth = self._pairs(*_sequences(X))
        predicted = model.predict(inputs)
        return float(r2_score(model.labels(truth, len(truth)), predicted.reshape(-1), sample_weight=sample_weight))

    def generate(self, warmup: Any, steps: int, *, exog: Any = None) -> np.ndarray:
        """A free run of ``steps`` forecasts after reading ``warmup`` (:meth:`~tff_esn.esn.model.Model.generate`)."""
        return self._model().generate(warmup, steps, exog=exog)
