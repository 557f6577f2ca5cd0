"""Anomalous-client discriminator (thesis ch. 4, §6.1–6.2, Alg. 3–4).

* :mod:`~discriminator.configs` — how the deltas are made and the network (light);
* :mod:`~discriminator.deltas` — training data: readout deltas of a real and a fake ESN;
* :mod:`~discriminator.model` — the network (Fig. 6.2), training, save/load with Keras;
* :mod:`~discriminator.search` — random search of its hidden sizes and dropout;
* :mod:`~discriminator.filter` — the client filter of the TFF processes (``load_filter``);
* :mod:`~discriminator.phase` — fake clients in the federation, accepted-vs-real report, MAE, Fig. 6.13;
* :mod:`~discriminator.cli` — ``tff-esn discriminator train|phase``.

Builds on :mod:`tff_esn`; ``tff_esn`` never imports this package (it finds the filter
loader through the ``tff_esn.client_filters`` entry point).
"""

from tff_esn.lazy import lazy_exports

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
