"""Anomalous-client discriminator (thesis ch. 4, §6.1–6.2, Alg. 3–4).

* :mod:`~discriminator.deltas` — training data: readout deltas of a real and a fake ESN;
* :mod:`~discriminator.model` — the network (Fig. 6.2), training, save/load with Keras;
* :mod:`~discriminator.search` — random search of its hidden sizes and dropout;
* :mod:`~discriminator.filter` — the client filter of the TFF processes (``load_filter``);
* :mod:`~discriminator.phase` — fake clients in the federation, accepted-vs-real report, MAE, Fig. 6.13;
* :mod:`~discriminator.cli` — ``tff-esn discriminator train|phase``.

Builds on :mod:`tff_esn`; ``tff_esn`` never imports this package (it finds the filter
loader through the ``tff_esn.client_filters`` entry point).
"""

from discriminator.deltas import FAKE, REAL, DeltaConfig, DeltaSet, generate_deltas, readout_trajectory
from discriminator.filter import DiscriminatorFilter, load_filter
from discriminator.model import (
    Discriminator,
    DiscriminatorConfig,
    DiscriminatorFileError,
    build_discriminator,
    evaluate,
    load_discriminator,
    save_discriminator,
    train_discriminator,
)
from discriminator.phase import acceptance_report, choose_fake_clients, plot_acceptance, run_discriminative_phase
from discriminator.search import search_discriminator

__all__ = [
    "FAKE", "REAL", "DeltaConfig", "DeltaSet", "Discriminator", "DiscriminatorConfig", "DiscriminatorFileError",
    "DiscriminatorFilter", "acceptance_report", "build_discriminator", "choose_fake_clients", "evaluate",
    "generate_deltas", "load_discriminator", "load_filter", "plot_acceptance", "readout_trajectory",
    "run_discriminative_phase", "save_discriminator", "search_discriminator", "train_discriminator",
]
