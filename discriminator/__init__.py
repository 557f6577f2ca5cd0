"""Anomalous-client discriminator (thesis ch. 4, §6.1–6.2, Alg. 3–4): readout deltas of a real and a fake
ESN (``deltas``), the network (``model``, ``search``), the federation's client filter (``filter``), the
discriminative phase (``phase``) and ``tff-esn discriminator`` (``cli``). ``tff_esn`` never imports this
package: it finds the filter through the ``tff_esn.client_filters`` entry point.
"""

from tff_esn.common.lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(("DeltaConfig", "DiscriminatorConfig"), ".configs"),
    **dict.fromkeys(("FAKE", "REAL", "DeltaSet", "generate_deltas", "readout_trajectory"), ".deltas"),
    **dict.fromkeys(("DiscriminatorFilter", "load_filter"), ".filter"),
    **dict.fromkeys(("Discriminator", "DiscriminatorFileError", "build_discriminator",
                     "evaluate", "load_discriminator", "save_discriminator", "train_discriminator"), ".model"),
    **dict.fromkeys(("acceptance_report", "choose_fake_clients", "plot_acceptance", "run_discriminative_phase"),
                    ".phase"),
    "search_discriminator": ".search",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing the package (its CLI) imports no TensorFlow
