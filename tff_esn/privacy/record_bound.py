"""The public bound on a DP record's length: the closed form's sensitivity with state mode ``all`` grows with the
states one sequence adds, so it is set from a stated bound, never from the training data's longest sequence.

:func:`record_steps` is that bound: ``--dp-max-steps`` (training sequences longer are cut to their last steps by
:func:`bounded`), or the data's one sequence length (a fixed-length format, public like the feature count);
sequences of unequal length without ``--dp-max-steps`` are refused. How many sequences were cut is a statistic of
the training data, so it is never written.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.privacy.config import PrivacyConfig


def cropped(client: ClientSequences, max_steps: int) -> ClientSequences:
    """``client`` with every sequence longer than ``max_steps`` cut to its last ``max_steps`` steps (as
    ``--ragged crop`` keeps them); per-step labels are cut with their steps."""
    steps = client.steps
    if steps.max(initial=0) <= max_steps:
        return client
    keep = np.minimum(steps, max_steps)
    width = int(keep.max())
    offsets = np.arange(width)[None, :]
    valid = offsets < keep[:, None]
    index = np.where(valid, (steps - keep)[:, None] + offsets, 0)
    x = np.take_along_axis(client.x, index[:, :, None], axis=1)
    y = np.take_along_axis(client.y, index, axis=1) if client.per_step else client.y
    return ClientSequences(x, y, keep)


def bounded(dataset: SequenceDataset, ids: Sequence[str], privacy: PrivacyConfig) -> SequenceDataset:
    """``dataset`` with the clients ``ids`` (the training clients) cut to ``privacy.dp_max_steps`` (``None``:
    unchanged)."""
    bound = privacy.dp_max_steps
    if bound is None or not privacy.dp_requested:
        return dataset
    chosen = set(ids)
    clients = {cid: cropped(c, bound) if cid in chosen else c for cid, c in dataset.clients.items()}
    return SequenceDataset(clients, dataset.n_classes, dataset.feature_names, dataset.label_names, dataset.source,
                           dataset.groups, dataset.task)


def record_steps(privacy: PrivacyConfig, dataset: SequenceDataset, *, state_mode: str) -> tuple[int, str]:
    """The public bound on a training sequence's steps and where it comes from (``metrics.json``'s
    ``privacy.record_bound``); a :class:`DataError` for unequal lengths without ``dp_max_steps`` in state mode
    ``all`` (the bound is above the washout: :class:`~tff_esn.closed_form.configs.ReadoutConfig` checks it)."""
    bound = privacy.dp_max_steps
    if bound is not None:
        return bound, (f"--dp-max-steps {bound}: training sequences longer are cut to their last {bound} steps "
                       "(how many were cut is not written: it is a statistic of the training data)")
    lengths = {int(c.x.shape[1]) for c in dataset.clients.values()}
    if state_mode != "all":
        return max(lengths), f"state mode {state_mode}: one state per sequence, whatever its length"
    if dataset.ragged or len(lengths) != 1:
        raise DataError(f"{dataset.source}: X: sequences of unequal length; DP with --state-mode all needs a public "
                        "bound on a sequence's steps (the longest training sequence is a statistic of the data it "
                        "would protect): give --dp-max-steps N (longer training sequences are cut to their last N "
                        "steps), or use --state-mode last or mean.")
    steps = max(lengths)
    return steps, f"the data's one sequence length ({steps} steps), a property of its format"
