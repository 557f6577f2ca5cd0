"""The seed of a run's DP randomness: from OS entropy and never written, unless ``--dp-seed`` (then the
noise is reproducible and the run recorded as not private, :func:`status`)."""

from __future__ import annotations

import secrets

from tff_esn.common.run_warnings import warn

KNOWN_SEED = "noise seed known (--dp-seed)"
NO_NOISE = "noise multiplier 0 (no noise)"
SEED_BITS = 63  # a non-negative int64: TF's stateless seeds and numpy's generators take it


def mechanism_seed(dp_seed: int | None) -> int:
    """``dp_seed``, or a fresh secret seed from the OS's entropy (warns when ``dp_seed`` is given)."""
    if dp_seed is None:
        return secrets.randbits(SEED_BITS)
    warn(f"the DP noise seed is known (--dp-seed {dp_seed}): the noise can be regenerated and cancelled, so the run "
         "is not private (metrics.json privacy.private: false); use --dp-seed for tests and debugging only")
    return int(dp_seed)


def warn_no_noise(noise_multiplier: float) -> None:
    """Warns that a DP run without noise (``z = 0``, or ε = ∞) is not private."""
    if noise_multiplier == 0:
        warn("DP noise multiplier 0: the clipped values are released without noise, ε = ∞; the run is not private")


def status(noise_multiplier: float, dp_seed: int | None) -> dict:
    """``private`` and, when false, ``not_private_reasons``; ``noise_seed`` only when it is known."""
    reasons = ([KNOWN_SEED] if dp_seed is not None else []) + ([NO_NOISE] if noise_multiplier == 0 else [])
    out: dict = {"private": not reasons, "noise_seed_source": "--dp-seed" if dp_seed is not None else
                 "operating system entropy, never written"}
    if reasons:
        out["not_private_reasons"] = reasons
    if dp_seed is not None:
        out["noise_seed"] = int(dp_seed)
    return out
