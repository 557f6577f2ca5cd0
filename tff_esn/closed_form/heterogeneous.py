"""Clients with different reservoirs (thesis Table 6.5): the ensemble ``ŷ(u) = Σ_c (n_c/n)·W_c x_c(u)``
(IncFed eq. 4) and alignment ``θ_c ← (1 − α)·θ_c + α·θ_target`` of W_in, Ŵ, b, g, then IncFed (α = 1: IncFed)."""

from __future__ import annotations

import numpy as np

from tff_esn.esn.hyperparameters import ReservoirConfig, client_reservoir
from tff_esn.closed_form.configs import DEFAULT_ALPHA, AlignmentConfig, ReadoutConfig, ensemble_cost, incfed_cost
from tff_esn.closed_form.fedavg_ridge import local_readouts
from tff_esn.esn.ridge import size_weighted_mean
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.closed_form.incfed import fit_incfed
from tff_esn.closed_form.run import Run, Scorer
from tff_esn.closed_form.selection import ALPHA_GRID, AUTO
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.draws import spectral_radius
from tff_esn.esn.states_numpy import layer_bounds


def client_weights(config: ReservoirConfig, n_inputs: int, clients: int) -> list[ReservoirWeights]:
    """One reservoir per client: :func:`~tff_esn.esn.hyperparameters.client_reservoir` drawn for ``n_inputs`` inputs."""
    return [ReservoirWeights.from_config(client_reservoir(config, i), n_inputs) for i in range(clients)]


def align(own: ReservoirWeights, target: ReservoirWeights, alpha: float, *, rescale: bool = False) -> ReservoirWeights:
    """``(1 − α)·own + α·target`` of W_in, Ŵ, b, g and the leaking rates (``rescale``: the target's ρ and ‖W_in‖)."""
    scalar = isinstance(own.leaky, float | int) and isinstance(target.leaky, float | int)
    if ((own.kernel.shape, own.layers, own.activation) != (target.kernel.shape, target.layers, target.activation)
            or (scalar and own.leaky != target.leaky)):
        raise ValueError(f"align: the reservoirs differ in W_in {own.kernel.shape} vs {target.kernel.shape}, layers "
                         f"{own.layers} vs {target.layers}, nonlinearities or constant leaking rate.")

    def mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return b.copy() if alpha == 1 else ((1.0 - alpha) * a + alpha * b).astype(np.float32)

    kernel, recurrent = mix(own.kernel, target.kernel), mix(own.recurrent, target.recurrent)
    if rescale and 0 < alpha < 1:
        def norm_to(block: tuple, scale) -> None:
            mixed = recurrent[block] if block else kernel
            reference = target.recurrent[block] if block else target.kernel
            mixed *= np.float32(scale(reference) / max(scale(mixed), 1e-12))

        bounds = layer_bounds(own.layers or (own.units,))
        norm_to((), np.linalg.norm)
        for (start, stop), below in zip(bounds, [None] + bounds[:-1]):
            norm_to((slice(start, stop), slice(start, stop)), spectral_radius)
            if below is not None:
                norm_to((slice(*below), slice(start, stop)), np.linalg.norm)
    leaky = own.leaky if scalar else tuple(mix(np.asarray(own.leaky, np.float32) * np.ones(own.units, np.float32),
                                               np.asarray(target.leaky, np.float32) * np.ones(own.units, np.float32)))
    return ReservoirWeights(kernel, recurrent, mix(own.bias, target.bias), mix(own.gain, target.gain), leaky,
                            own.layers, own.readout_from, own.activation)


# --------------------------------------------------------------------------- the registry's run functions
def run_ensemble(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Each client its own reservoir and ridge readout; size-weighted ensemble of outputs."""
    run = Run(dataset, split, config, "ensemble")
    members = dict(zip(run.train_ids, client_weights(run.reservoir, run.weights.n_inputs, len(run.train_ids))))

    def scorer(l2: float) -> Scorer:
        stats = run.stats(members)
        readouts = local_readouts(stats, l2)
        weights = [members[cid] for cid in run.train_ids]
        sizes = [s.n for s in stats]

        def score(ids):
            outputs = [run.harvester.scores(r, w, ids) for r, w in zip(readouts, weights)]
            return size_weighted_mean([o[0] for o in outputs], sizes), outputs[0][1]

        return score

    l2 = run.choose_l2(lambda grid: [scorer(l2) for l2 in grid])
    stats = run.stats(members)
    model = run.model(local_readouts(stats, l2), [members[cid] for cid in run.train_ids], sizes=[s.n for s in stats],
                      configs=[client_reservoir(run.reservoir, i) for i in range(len(run.train_ids))])
    return run.report(model, ensemble_cost(len(members), run.n_features, run.n_outputs))


def run_alignment(dataset: SequenceDataset, split: Split, config: AlignmentConfig) -> dict:
    """Structural alignment: clients interpolate toward the shared reservoir, then IncFed."""
    run = Run(dataset, split, config, "alignment")
    members = client_weights(run.reservoir, run.weights.n_inputs, len(run.train_ids))

    def aligned(alpha: float) -> dict[str, ReservoirWeights]:
        return {cid: align(w, run.weights, alpha, rescale=config.rescale) for w, cid in zip(members, run.train_ids)}

    alphas = ((DEFAULT_ALPHA, *(a for a in ALPHA_GRID if a != DEFAULT_ALPHA)) if config.alpha == AUTO
              else (config.alpha,))
    alpha, chosen = run.choose(alphas, lambda a: lambda grid: run.exact_sweep(run.stats(aligned(a)))(grid))
    readout = fit_incfed(run.stats(aligned(alpha)), run.l2)
    extra = {"alpha": alpha, **({"alpha_selection": chosen} if chosen else {})}
    return run.report(run.model(readout), incfed_cost(run.n_features, run.n_outputs), **extra)
