"""Clients with different reservoirs (concepts page "When reservoirs differ"; thesis Table 6.5).

When every client draws its own reservoir, readouts live in different state spaces and
cannot be averaged. Two answers:

* **prediction ensemble** — each client trains its own ridge readout on its own reservoir
  (IncFed eq. 4) and the federation predicts with the size-weighted mean of the members'
  outputs, ``ŷ(u) = Σ_c (n_c/n)·W_c x_c(u)``, where ``x_c(u)`` is reservoir c's state
  (:func:`~tff_esn.closed_form.fedavg_ridge.size_weighted_mean` of the members' scores);
* **structural alignment** — every client interpolates its reservoir toward a shared
  target, ``θ_c ← (1 − α)·θ_c + α·θ_target`` for W_in, Ŵ, b and g, then the clients
  federate by IncFed on their aligned reservoirs and the readout is used with the target
  reservoir. With α = 1 every client holds the target and this is exactly IncFed; for
  α < 1 the statistics come from slightly different reservoirs and the result is an
  approximation.

Client i's reservoir is :func:`tff_esn.esn.hyperparameters.client_reservoir` ``(config, i)`` — the same
draw as the gradient family's clients with different reservoirs; the target is the
configuration's own reservoir.

**What the interpolation does.** Own and target weights are independent draws, so the
literal mix has entries of variance ((1 − α)² + α²)·v: at α = 0.5 the spectral radius drops
from 0.9 to 0.67 and the W_in norm by a factor 0.68 (100 units) — the echo-state property
holds (ρ only shrinks), but the aligned reservoir no longer has the configured ρ and input
scaling; ``align(..., rescale=True)`` scales both back. That did not change the accuracy
consistently (OSULeaf 0.21 → 0.15, BasicMotions 0.58 → 0.50–0.58, JapaneseVowels 0.77 →
0.77–0.79 at α = 0.5), so the literal mix stays the default. The real defect is the mismatch:
the readout is fitted on the clients' aligned states and used on the target's, and at
α = 0.5 a client's W_in correlates only 0.68 with the target's (0.99 at α = 0.9), so unit i
is a different feature at training and at test time.
Measured (100 units, mean states, λ 1e-6, literal): test accuracy at α = 0.5 / 0.9 / 1 —
OSULeaf 0.26 / 0.23 / 0.68 (majority 0.24), BasicMotions 0.50 / 1.00 / 1.00, JapaneseVowels
0.77 / 0.96 / 0.99 (the UCR numbers with the clients' seeds drawn before the one seed rule of
:func:`~tff_esn.esn.hyperparameters.client_reservoir`); synthetic WESAD (fedip-wesad, λ 1e-3) 0.55 / 0.67 /
IncFed 0.64 (0.53 / 0.69 with the former seeds: another draw). With a reservoir
bias (scale 1) the mismatched biases also shift every output, and on OSULeaf alignment
predicts a single class even at α = 0.9 (IncFed 0.56) — the run's ``warnings`` say so. The
concepts page itself finds that "alignment only pays off near full homogenisation"; hence
:data:`~tff_esn.closed_form.configs.DEFAULT_ALPHA` = 0.9, not 0.5.
"""

from __future__ import annotations

import numpy as np

from tff_esn.esn.hyperparameters import ReservoirConfig, client_reservoir
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.esn.draws import spectral_radius




def client_reservoirs(config: ReservoirConfig, n_inputs: int, clients: int) -> list[ReservoirWeights]:
    """One reservoir per client: :func:`~tff_esn.esn.hyperparameters.client_reservoir` drawn for ``n_inputs`` inputs."""
    if clients < 1:
        raise ValueError(f"clients: expected ≥ 1, got {clients}.")
    return [ReservoirWeights.from_config(client_reservoir(config, i), n_inputs) for i in range(clients)]


def align(own: ReservoirWeights, target: ReservoirWeights, alpha: float, *, rescale: bool = False) -> ReservoirWeights:
    """``(1 − α)·own + α·target`` for W_in, Ŵ, b and g (structural alignment).

    With ``rescale`` the interpolated Ŵ (0 < α < 1) is scaled back to the target's spectral
    radius and W_in to the target's Frobenius norm, so the aligned reservoir keeps the
    configured ρ and input scaling; the default is the literal interpolation, which shrinks
    both (see the module docstring).
    """
    if not np.isfinite(alpha) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a number in [0, 1], got {alpha!r}.")
    if own.kernel.shape != target.kernel.shape or own.leaky != target.leaky:
        raise ValueError(
            f"align: reservoirs must share shape and leaking rate to be interpolated, got W_in {own.kernel.shape} "
            f"(a={own.leaky}) and {target.kernel.shape} (a={target.leaky})."
        )

    def mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return b.copy() if alpha == 1 else ((1.0 - alpha) * a + alpha * b).astype(np.float32)

    kernel, recurrent = mix(own.kernel, target.kernel), mix(own.recurrent, target.recurrent)
    if rescale and 0 < alpha < 1:
        kernel = (kernel * (np.linalg.norm(target.kernel) / max(np.linalg.norm(kernel), 1e-12))).astype(np.float32)
        recurrent = (recurrent * (spectral_radius(target.recurrent) / max(spectral_radius(recurrent), 1e-12))
                     ).astype(np.float32)
    return ReservoirWeights(kernel, recurrent, mix(own.bias, target.bias), mix(own.gain, target.gain), own.leaky)
