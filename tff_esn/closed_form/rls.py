"""The ridge readout learned online: :class:`~tff_esn.esn.rls.RLSReadout` passed from client to client;
after the last, ``W`` is the pooled ridge readout (IncFed eq. 3)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tff_esn.closed_form.configs import ReadoutConfig, rls_cost
from tff_esn.closed_form.harvest import readout_targets
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.rls import RLSReadout
from tff_esn.esn.states_numpy import states_and_statistics


def training_blocks(run: Run, cid: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Client ``cid``'s training ``(states, targets)``, one block per harvest batch (the rows of IncFed eq. 6)."""
    client, spec, w = run.dataset.clients[cid], run.spec, run.weights
    targets = readout_targets(client, run.n_outputs, spec.state_mode)
    for rows, x, lengths in run.harvester.batches(client):
        states, _ = states_and_statistics(x, w.kernel, w.recurrent, w.bias, w.gain, w.leaky, keep=spec.state_mode,
                                          washout=spec.washout, lengths=lengths,
                                          with_inputs=spec.raw_inputs)
        y = targets[rows]
        if spec.state_mode != "all":
            yield states.astype(np.float64), y
            continue
        steps = states.shape[1]
        y = y[:, spec.washout:spec.washout + steps] if y.ndim == 3 else np.repeat(y[:, None], steps, axis=1)
        valid = np.ones(states.shape[:2], bool) if lengths is None else \
            np.arange(steps)[None, :] < (np.asarray(lengths) - spec.washout)[:, None]
        yield states[valid].astype(np.float64), y[valid]


def run_rls(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """The RLS readout passed through the training clients at the λ chosen on the batch ridge path."""
    run = Run(dataset, split, config, "rls")
    l2 = run.choose_l2(run.exact_sweep(run.stats()))
    rls = RLSReadout(run.n_features, run.n_outputs, l2, bias=run.spec.readout_bias)
    for cid in run.train_ids:
        for states, targets in training_blocks(run, cid):
            rls.update(states, targets)
    return run.report(run.model(rls.readout), rls_cost(run.n_features, run.n_outputs))
