"""Every random stream the package draws, one named :class:`Stream` each (:data:`STREAMS`).

A stream is numpy's ``SeedSequence([root seed, *layout])``: the layout's integers tell it apart, its named slots hold
the values a draw supplies (a client's index, a round). numpy pads entropy of fewer than four words with zeros, so
``[s, 3]`` and ``[s, 3, 0]`` are one stream. The roots, the seeds a stream derives from:

- ``run``: a run's ``--seed``: the reservoir's seed (client and deep-layer reservoirs get seeds derived from it), the
  split, partition, carving, baselines, Partial IncFed's and pFedRR's client draws, the federated clients' noise,
  shuffling and sampling, a generated series' draws and the discriminative phase's fake clients.
- ``deltas``: the seed of a discriminator's training deltas (their noise and shuffling).
- ``discriminator``: a discriminator's own seed (its validation split and epoch orders).
- ``simulated``, ``synthetic-wesad``, ``synthetic-hhar``: the seed a source is generated from.
- ``mechanism``: a DP mechanism's seed (:func:`tff_esn.privacy.noise_seed.mechanism_seed`); TensorFlow's stateless
  noise draws take that seed itself, the secret client sampling :data:`POISSON_SAMPLING`.
- ``audit``: the seed of an empirical privacy audit's synthetic records.

Streams of one root that meet for some values (``tests/test_streams.py`` lists them; a run reproduces value for
value, so they stay): a generated series' draws meet the reservoir's W_in (segments) and Ŵ (realisation 0); round 0's
federated noise, shuffling and sampling meet Ŵ, b and the leaking rates; a client's noise under cached states meets
round r's noise of client 0; client 0's own reservoir seed is the graph's seed; a centralized fit's epoch orders
meet W_in, and the discriminator's meet its validation split.

Two generators outside numpy take integer seeds: the tuner's untried configurations ``random.Random(seed + k)``
(keras-tuner's oracle seed, ``k`` the configurations drawn so far) and the discriminator's Keras layers
(``GlorotUniform(seed + i)``, ``Dropout(seed + 10 + i)`` for layer ``i``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ROOTS = ("run", "deltas", "discriminator", "simulated", "synthetic-wesad", "synthetic-hhar", "mechanism", "audit")
"""The seeds a stream can derive from (module docstring)."""


def child_seed(seed: int, *path: int) -> int:
    """A 31-bit integer seed derived from ``seed`` and a path of integers (numpy ``SeedSequence``)."""
    import numpy as np  # this module stays importable without numpy: the CLI's --help reads the reservoir defaults

    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0] & 0x7FFFFFFF)


@dataclasses.dataclass(frozen=True)
class Stream:
    """One stream: ``SeedSequence([root seed, *layout])``, each ``str`` of ``layout`` naming a value the draw gives."""

    name: str
    root: str
    layout: tuple[int | str, ...]
    what: str

    def __post_init__(self) -> None:
        if self.root not in ROOTS:
            raise ValueError(f"stream {self.name}: root {self.root!r} is none of {ROOTS}; add it to ROOTS.")

    @property
    def slots(self) -> tuple[str, ...]:
        """The names of the values a draw supplies, in order."""
        return tuple(w for w in self.layout if isinstance(w, str))

    def entropy(self, seed: int, *values: int) -> list[int]:
        """``[seed, *layout]`` with ``values`` in the layout's named slots."""
        if len(values) != len(self.slots):
            raise TypeError(f"stream {self.name}: expected {len(self.slots)} value(s) {self.slots}, got {values!r}.")
        given = iter(values)
        return [int(seed), *(int(next(given)) if isinstance(w, str) else w for w in self.layout)]

    def generator(self, seed: int, *values: int) -> np.random.Generator:
        """The stream's numpy generator."""
        import numpy as np

        return np.random.default_rng(np.random.SeedSequence(self.entropy(seed, *values)))

    def seed(self, seed: int, *values: int) -> int:
        """The stream as a 31-bit integer seed (:func:`child_seed`), for generators seeded by an integer."""
        return child_seed(*self.entropy(seed, *values))


INPUT_WEIGHTS = Stream("reservoir.input_weights", "run", (0,), "W_in's values and connections (IncFed eq. 1)")
RECURRENT_WEIGHTS = Stream("reservoir.recurrent_weights", "run", (1,),
                           "Ŵ's values and connections, or a graph topology's edge weights")
BIAS = Stream("reservoir.bias", "run", (2,), "the bias b")
GRAPH = Stream("reservoir.graph", "run", (3,),
               "the integer seed of a small-world or scale-free graph (random.Random, networkx)")
LEAK_RATES = Stream("reservoir.leak_rates", "run", (4,), "per-unit leaking rates")
LINK_SIGNS = Stream("reservoir.link_signs", "run", (5,), "the links' signs (link_signs='random')")
ACTIVATIONS = Stream("reservoir.activations", "run", (6,), "each unit's nonlinearity in a mixed reservoir")
DEEP_LAYER = Stream("reservoir.deep_layer", "run", (5, "layer"),
                    "the integer seed of a deep ESN's layer ≥ 1 (layer 0 keeps the reservoir's seed)")
CLIENT_RESERVOIR = Stream("reservoir.client", "run", (3, "client"),
                          "the integer seed of a client's own reservoir (thesis Table 6.5)")
RANDOM_BASELINE = Stream("metrics.random_baseline", "run", (7,), "the uniformly random guesses of the baseline")
BASELINE_ROWS = Stream("baselines.rows", "run", (11,), "the training rows the baseline models keep")
TRAIN_FRACTION = Stream("split.train_fraction", "run", ("n_train", 0x5B11),
                        "the training clients a train_fraction keeps, of n_train")
NPZ_SPLIT = Stream("split.npz", "run", ("n_clients", 0x5E1), "the seeded split of an npz without a split column")
PARTITION = Stream("partition.assign", "run", ("partitioner", 0x9A27, "draw"),
                   "the client of each sequence (partitioner: its index in PARTITIONERS; draw: the call's stream)")
CLIENT_FOLDS = Stream("carving.client_folds", "run", (0xCA4E, "n_train"),
                      "the order the training clients are dealt into validation folds")
FEDERATED_NOISE = Stream("federated.input_noise", "run", (1, "round", "client"),
                         "the integer seed of a client's injected input noise in a round (thesis §6.1)")
CACHED_NOISE = Stream("federated.cached_noise", "run", (1, "client"),
                      "the integer seed of a client's input noise under cached states (drawn once)")
FEDERATED_SHUFFLE = Stream("federated.shuffle", "run", (2, "round", "client"),
                           "the integer seed of a client's local epoch orders in a round")
FEDERATED_SAMPLE = Stream("federated.sample", "run", (4, "round"),
                          "the integer seed of a round's uniformly sampled clients")
PARTIAL_FEATURES = Stream("partial_incfed.features", "run", (0x9A17, "client"),
                          "a client's exploration draws of Partial IncFed's feature selection (thesis eq. B.15)")
PFEDRR_UNITS = Stream("pfedrr.random_units", "run", (0xF3DD, "client"), "a client's units of R-pFedRR")
SERIES_SEGMENTS = Stream("series.segments", "run", (0,), "the one realisation of a generated series cut in segments")
SERIES_REALISATION = Stream("series.realisation", "run", (1, "realisation"),
                            "one realisation of a generated series (split_by='realisations')")
DISCRIMINATOR_NOISE = Stream("discriminator.noise", "deltas", (11,),
                             "the integer seed of the fake clients' noise")
DISCRIMINATOR_SHUFFLE = Stream("discriminator.shuffle", "deltas", (12,),
                               "the integer seed of the discriminator's delta shuffling")
DISCRIMINATOR_ORDER = Stream("discriminator.order", "discriminator", (),
                             "the order of the training deltas before the validation split (training and search)")
DISCRIMINATOR_EPOCHS = Stream("discriminator.epoch_orders", "discriminator", (),
                              "the epoch orders of the discriminator's fit (tff_esn.federated.clients.seeded_fit_data)")
FIT_EPOCHS = Stream("fit.epoch_orders", "run", (), "the epoch orders of a centralized gradient fit seeded by the run's "
                    "seed (thesis-central, the thesis tuner's trials; tff_esn.federated.clients.seeded_fit_data)")
DISCRIMINATOR_FAKES = Stream("discriminator.fakes", "run", (21,), "the training clients made fake")
SIMULATED_CLIENT = Stream("simulated.client", "simulated", ("client",), "a simulated client's labels and sequences")
WESAD_SUBJECT = Stream("synthetic_wesad.subject", "synthetic-wesad", ("subject",),
                       "a synthetic WESAD subject's protocol order and chest signals")
WESAD_WRIST = Stream("synthetic_wesad.wrist", "synthetic-wesad", ("subject", 1),
                     "a synthetic WESAD subject's wrist signals")
HHAR_USER = Stream("synthetic_hhar.user", "synthetic-hhar", ("user", 0), "a synthetic HHAR user's body and gait")
HHAR_DEVICE = Stream("synthetic_hhar.device", "synthetic-hhar", ("user", "device"),
                     "a synthetic HHAR user's device copy (device = 1 + 2 · device index + copy, copy 1 or 2)")
POISSON_SAMPLING = Stream("privacy.poisson_sampling", "mechanism", (1, "round"),
                          "a round's secret Poisson client picks under client-level DP")
AUDIT_RECORDS = Stream("privacy.audit_records", "audit", (), "an empirical audit's synthetic states or updates")

STREAMS: tuple[Stream, ...] = tuple(v for v in tuple(globals().values()) if isinstance(v, Stream))
"""Every stream above."""
