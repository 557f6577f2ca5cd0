"""Whether a reservoir's states can carry information: :func:`check_states` warns when most sampled
training states saturate or no unit varies."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.data.sequences import ClientSequences
from tff_esn.common.run_warnings import warn

SATURATED = 0.99
"""|x| beyond which a unit's state is saturated (tanh's slope there is below 0.02)."""

SATURATED_SHARE = 0.5
"""Share of saturated states above which a run records a warning."""

CONSTANT_SPREAD = 1e-6
"""Per-unit standard deviation over the sampled states below which a unit carries nothing."""

SAMPLE = 64
"""Training sequences :func:`check_states` runs (the first ones, client by client)."""

SAMPLE_STEPS = 2048
"""Steps after the washout that :func:`check_states` keeps of each sampled sequence (bounded memory)."""


def check_states(weights: ReservoirWeights, clients: Iterable[ClientSequences], washout: int) -> dict[str, float]:
    """Warns when sampled training states mostly saturate or do not vary; ``{"saturated_share", "max_unit_std"}``."""
    parts = []
    left = SAMPLE
    for client in clients:
        if left <= 0:
            break
        steps = np.minimum(client.steps[:left], washout + SAMPLE_STEPS)
        x = client.x[:left, :int(steps.max())]
        states, _ = states_and_statistics(x, weights.kernel, weights.recurrent, weights.bias, weights.gain,
                                       weights.leaky, keep="all", washout=washout, lengths=steps,
                                       layers=weights.layers, activation=weights.activation)
        parts.append(states[np.arange(states.shape[1])[None, :] < (steps - washout)[:, None]])
        left -= len(steps)
    states = np.concatenate(parts) if parts else np.zeros(0)
    if not states.size:
        return {"saturated_share": 0.0, "max_unit_std": 0.0}
    share = float(np.mean(np.abs(states) > SATURATED))
    spread = float(states.std(axis=0).max())
    if share > SATURATED_SHARE:
        warn(f"the reservoir saturates: {100 * share:.0f} % of the training states have |x| > {SATURATED} "
             f"(tanh's flat tails), so the readout sees nearly binary states whatever the input; lower "
             f"--spectral-radius, --input-scaling or --bias-scaling (or standardise the inputs).")
    elif spread < CONSTANT_SPREAD:
        warn(f"the reservoir's states do not vary between training steps and sequences (largest per-unit std "
             f"{spread:.1e}): the readout cannot separate the classes; raise --input-scaling or check the inputs.")
    return {"saturated_share": share, "max_unit_std": spread}
