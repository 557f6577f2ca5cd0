"""Model selection with KerasTuner: the thesis' and the papers' searches.

* :mod:`tuning.spaces` — the published search spaces (thesis Table 6.1, IncFed Tables I–II,
  FedIP Table 1, pFedRR §3) as named ``keras_tuner.HyperParameters`` builders.
* :mod:`tuning.oracle` — random search without replacement that stops when a finite space
  is exhausted (thesis §6.1).
* :mod:`tuning.thesis` — the thesis hypermodel (reservoir + sigmoid readout, validation F1).
* :mod:`tuning.closed_form` — a KerasTuner tuner whose trial fits the ridge readout in
  closed form (IncFed eq. 10; FedIP first), reusing harvests across trials.
* :mod:`tuning.search` — :func:`tune`: data, tuner, progress, resume, ``best_hparams.json``.
* :mod:`tuning.cli` — ``tff-esn tune SPACE --data SOURCE --trials N --out DIR``.

``tuning`` builds on ``tff_esn``; ``tff_esn`` never imports ``tuning``.
"""

from tuning.closed_form import ClosedFormTuner
from tuning.oracle import ExhaustiveRandomSearchOracle
from tuning.search import TuneResult, tune
from tuning.spaces import SPACES, SearchSpace, get_space
from tuning.thesis import BinaryF1, ThesisHyperModel

__all__ = ["BinaryF1", "ClosedFormTuner", "ExhaustiveRandomSearchOracle", "SPACES", "SearchSpace", "ThesisHyperModel",
           "TuneResult", "get_space", "tune"]
