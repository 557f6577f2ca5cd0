"""A KerasTuner tuner whose trial fits the ridge readout in closed form (no gradient epochs).

A trial draws a reservoir (FedIP spaces: adapted by :func:`~tff_esn.closed_form.fedip.fedip_numpy`),
harvests ``A``, ``B`` (IncFed eqs. 6–9) with the run's ``Harvester``, solves ``W = A (B + λI)⁻¹`` (eq. 10)
and reports the validation metrics; harvests of the ``cache_size`` latest reservoirs are kept.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

import numpy as np

from keras_tuner.engine.base_tuner import BaseTuner

from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import fit_incfed
from tff_esn.common.metrics import classification_metrics, predictions
from tff_esn.closed_form.fedip import IPConfig, fedip_numpy, state_scaled_l2
from tff_esn.common.validation import is_count
from tuning.hparams import RESERVOIR_FIELDS, reservoir_config, run_hparams

IP_KEYS = ("ip_mu", "ip_sigma", "ip_eta", "ip_epochs")


class ClosedFormTuner(BaseTuner):
    """Closed-form ridge-readout tuner (IncFed eq. 10) over a KerasTuner oracle.

    Args:
        oracle: a KerasTuner oracle holding the space (e.g.
            :class:`tuning.oracle.ExhaustiveRandomSearchOracle`); its objective must be one of
            the reported metrics (``val_accuracy``, ``val_f1_macro``, ``val_auc``).
        dataset: the clients' sequences.
        split: training clients (harvested) and validation clients (scored); must have
            validation clients.
        spec: which states enter the readout (default: ``tff-esn run``'s default).
        seed: reservoir seed shared by every trial (IncFed §IV-B: one initialisation).
        per_client_l2: add λ once per client (IncFed eq. 7) instead of once (exact).
        ip_rounds: FedIP rounds before the readout, for spaces with ``ip_*`` hyperparameters
            (default: ``tff-esn run fedip``'s).
        cache_size: reservoirs whose harvests are kept (≥ 1).
        directory, project_name, overwrite: KerasTuner project folder (resume when it exists
            and ``overwrite`` is false).
    """

    def __init__(self, oracle, dataset: SequenceDataset, split: Split, *, spec: StateSpec = StateSpec(),
                 seed: int = 0, per_client_l2: bool = False, ip_rounds: int = 3, cache_size: int = 4, directory=None,
                 project_name=None, overwrite: bool = False):
        if not split.val:
            raise ValueError(f"ClosedFormTuner: split {split.name!r} has no validation clients to score trials on.")
        if not is_count(cache_size, 1):
            raise ValueError(f"ClosedFormTuner: cache_size must be an integer ≥ 1, got {cache_size!r}.")
        self.dataset = dataset
        self.split = split
        self.spec = spec
        self.seed = seed
        self.per_client_l2 = per_client_l2
        self.ip_rounds = ip_rounds
        self.cache_size = cache_size
        self.harvests = 0
        self._cache: collections.OrderedDict[tuple, tuple[Harvester, ReservoirWeights]] = collections.OrderedDict()
        super().__init__(oracle, hypermodel=None, directory=directory, project_name=project_name, overwrite=overwrite)

    @property
    def n_inputs(self) -> int:
        return len(self.dataset.feature_names)

    def hparams(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Flat ``tff-esn run`` hyperparameters of a trial (connection counts → fractions)."""
        return run_hparams(values, n_inputs=self.n_inputs, seed=self.seed)

    def _reservoir(self, hparams: Mapping[str, Any]) -> tuple[Harvester, ReservoirWeights, ReservoirWeights]:
        """The trial's harvester, its reservoir (after FedIP for IP spaces) and the unadapted one."""
        key = tuple((k, hparams[k]) for k in RESERVOIR_FIELDS + IP_KEYS if k in hparams)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        harvester = Harvester(self.dataset, self.spec)
        initial = weights = ReservoirWeights.from_config(reservoir_config(hparams), self.n_inputs)
        if any(k in hparams for k in IP_KEYS):
            weights = _plastic_weights(self.dataset, weights, self.split, hparams, self.ip_rounds)
        self._cache[key] = (harvester, weights, initial)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        self.harvests += 1
        return harvester, weights, initial

    def run_trial(self, trial, *args, **kwargs) -> dict[str, float]:
        """Harvest (or reuse), solve the IncFed readout (eqs. 8–10), score the validation clients.

        After FedIP, λ is moved to the adapted states' scale as ``tff-esn run fedip`` does by
        default (:func:`tff_esn.closed_form.fedip.state_scaled_l2`), so a trial scores what the run gives.
        """
        return self.score(self.hparams(trial.hyperparameters.values))

    def score(self, hparams: Mapping[str, Any]) -> dict[str, float]:
        """The validation metrics (``val_…``) of the readout of flat ``hparams`` (:meth:`run_trial`'s)."""
        harvester, weights, initial = self._reservoir(hparams)
        stats = [harvester.stats(weights, cid) for cid in self.split.train]
        l2 = float(hparams["l2"])
        if weights is not initial:
            l2 = state_scaled_l2(l2, [harvester.stats(initial, cid) for cid in self.split.train], stats)
        readout = fit_incfed(stats, l2, per_client=self.per_client_l2)
        scores, labels = harvester.scores(readout, weights, self.split.val)
        metrics = classification_metrics(labels, scores, self.dataset.n_classes)
        metrics["classes_predicted"] = len(np.unique(predictions(scores)))
        return {f"val_{k}": float(v) for k, v in metrics.items() if k != "n" and v is not None}


def _plastic_weights(dataset: SequenceDataset, weights: ReservoirWeights, split: Split,
                     hparams: Mapping[str, Any], rounds: int) -> ReservoirWeights:
    """Reservoir after FedIP (FedIP Alg. 1) on the training clients (``tff_esn.closed_form.fedip``)."""
    cfg = IPConfig(mu=float(hparams["ip_mu"]), sigma=float(hparams["ip_sigma"]), eta=float(hparams["ip_eta"]),
                   epochs=int(hparams["ip_epochs"]))
    return fedip_numpy(weights, list(dataset.select(split.train).values()), cfg, rounds)
