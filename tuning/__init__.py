"""Model selection with KerasTuner: the thesis' and the papers' searches.

* :mod:`tuning.spaces` — the published search spaces (thesis Table 6.1, IncFed Tables I–II,
  FedIP Table 1, pFedRR §3) as named ``keras_tuner.HyperParameters`` builders.
* :mod:`tuning.oracle` — random search without replacement that stops when a finite space
  is exhausted (thesis §6.1).
* :mod:`tuning.thesis` — the thesis hypermodel (reservoir + sigmoid or softmax readout, validation F1).
* :mod:`tuning.closed_form` — a KerasTuner tuner whose trial fits the ridge readout in
  closed form (IncFed eq. 10; FedIP first), reusing harvests across trials.
* :mod:`tuning.search` — :func:`tune`: data, tuner, progress, resume, ``best_hparams.json``.
* :mod:`tuning.cli` — ``tff-esn tune SPACE --data SOURCE --trials N --out DIR``.

``tuning`` builds on ``tff_esn``; ``tff_esn`` never imports ``tuning``.
"""

from tff_esn.lazy import lazy_exports

_EXPORTS = {
    "ClosedFormTuner": ".closed_form", "ExhaustiveRandomSearchOracle": ".oracle", "TuneResult": ".search",
    "tune": ".search", "SPACES": ".spaces", "SearchSpace": ".spaces", "get_space": ".spaces",
    "BinaryF1": ".thesis", "MacroF1": ".thesis", "ThesisHyperModel": ".thesis",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing the package (its CLI) imports no TensorFlow
