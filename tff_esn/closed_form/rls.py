"""The ridge readout learned online: recursive least squares passed from client to client.

The running ``(W, P)`` of :class:`tff_esn.esn.rls.RLSReadout` (``P = (Σ s sᵀ + λI)⁻¹``) visits the
training clients in order; each adds its own states, one block per sequence batch, and passes it
on. After the last client ``W`` is the batch ridge readout of the pooled states (IncFed eq. 3,
the centralized and IncFed readout) up to rounding, without any party holding more than
``(W, P)``: the streaming counterpart of the summed statistics.
"""

from __future__ import annotations

import numpy as np

from tff_esn import communication
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.closed_form.run import Run
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.rls import RLSReadout

BLOCK = 256
"""States added per Woodbury update."""


def rls_readout(run: Run, l2: float) -> np.ndarray:
    """The RLS readout at λ = ``l2`` after every training client's states, in the split's order."""
    rls = RLSReadout(run.n_features, run.n_outputs, l2, bias=run.spec.readout_bias)
    for cid in run.train_ids:
        features = run.harvester.features(run.weights, cid)
        targets = run.dataset.task.encode(features.labels, run.n_outputs)
        for start in range(0, len(features.states), BLOCK):
            rls.update(features.states[start:start + BLOCK], targets[start:start + BLOCK])
    return rls.readout


def run_rls(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """The registry's run function: the RLS readout passed through the training clients (module docstring)."""
    per_step = any(dataset.clients[c].per_step for c in split.train)
    if config.state_mode == "all" and not per_step:
        raise DataError(f"{dataset.source}: rls: --state-mode all with one label per sequence trains on every step, "
                        "while the harvest keeps each sequence's mean state; use --state-mode mean or last.")
    if config.l2 != "auto" and config.l2 <= 0:
        raise DataError(f"{dataset.source}: rls: λ must be > 0 (P starts at I/λ), got {config.l2}; give --l2 > 0.")
    run = Run(dataset, split, config, "rls")
    run.stats()  # one pooled pass harvests every group's states
    l2 = run.choose_l2(lambda grid: [run.scorer(rls_readout(run, l2)) for l2 in grid])
    readout = rls_readout(run, l2)
    return run.report(run.scorer(readout), communication.rls(run.n_features, run.n_outputs))
