"""Model selection with KerasTuner: the thesis' and the papers' searches.

The published spaces (``spaces``), an exhaustive random-search oracle (``oracle``), the thesis
hypermodel (``thesis``), a closed-form ridge tuner (``closed_form``), :func:`tune` (``search``) and
``tff-esn tune`` (``cli``). ``tff_esn`` never imports ``tuning``.
"""

from tff_esn.common.lazy import lazy_exports

_EXPORTS = {
    "ClosedFormTuner": ".closed_form", "ExhaustiveRandomSearchOracle": ".oracle", "TuneResult": ".search",
    "tune": ".search", "SPACES": ".spaces", "SearchSpace": ".spaces", "get_space": ".spaces",
    "BinaryF1": ".thesis", "MacroF1": ".thesis", "ThesisHyperModel": ".thesis",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing the package (its CLI) imports no TensorFlow
