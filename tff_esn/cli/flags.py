"""The flags of ``tff-esn run ALGORITHM`` and the typed config they map to.

Every flag's destination is a setting of the algorithm's config class
(:func:`tff_esn.algorithms.config_fields`: ``--units`` → ``reservoir.units``, ``--ip-mu`` →
``ip.mu``, ``--client-lr`` → ``model.learning_rate``); :func:`config_of` builds the config
from the parsed flags and reports a config's ``ValueError`` as a :class:`UsageError`
naming the flag. The defaults shown come from the config classes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tff_esn.algorithms import Algorithm, config_from_flags
from tff_esn.cli import UsageError
from tff_esn.closed_form.l2_selection import AUTO
from tff_esn.closed_form.configs import (BACKENDS, L2_SCALES, MASKS, READINGS, AlignmentConfig, FedIPConfig,
                                         IPConfig, PartialIncFedConfig, PFedRRConfig, ReadoutConfig)
from tff_esn.config import STATE_MODES, ReservoirConfig
from tff_esn.federated.configs import (RESERVOIR_MODES, STATE_SOURCES, THESIS_RESERVOIR, FedAvgConfig,
                                       FedCurvConfig, ThesisModelConfig)
from tff_esn.privacy.config import DEFAULT_IP_CLIP, DEFAULT_SECURE_BITS, MODELS, check_privacy

AddFlags = Callable[[argparse.ArgumentParser], None]


def _l2(text: str) -> float | str:
    """``--l2``: a number, or ``auto`` (λ chosen on the validation clients)."""
    if text == AUTO:
        return AUTO
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0 or {AUTO!r}, got {text!r}") from None


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every algorithm: reservoir hyperparameters, readout, states, seed."""
    d, r = ReservoirConfig(), ReadoutConfig()
    g = parser.add_argument_group("reservoir")
    g.add_argument("--units", type=int, default=d.units, help="reservoir units N_R (default %(default)s)")
    g.add_argument("--spectral-radius", type=float, default=d.spectral_radius, help="ρ(Ŵ) (default %(default)s)")
    g.add_argument("--leaky", type=float, default=d.leaky, help="leaking rate a ∈ (0, 1] (default %(default)s)")
    g.add_argument("--input-scaling", type=float, default=d.input_scaling, help="default %(default)s")
    g.add_argument("--input-connectivity", type=float, default=d.input_connectivity,
                   help="fraction in (0, 1] of inputs per unit (default %(default)s)")
    g.add_argument("--recurrent-connectivity", type=float, default=d.recurrent_connectivity,
                   help="fraction in (0, 1] of units feeding each unit (default %(default)s)")
    g.add_argument("--bias-scaling", type=float, default=d.bias_scaling, help="reservoir bias scale (default %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed, help="seed of the reservoir and of every random choice")
    g = parser.add_argument_group("readout and states")
    g.add_argument("--l2", type=_l2, default=r.l2,
                   help="ridge λ ≥ 0, or 'auto': chosen on the validation clients (default %(default)s)")
    g.add_argument("--state-mode", choices=STATE_MODES, default=r.state_mode,
                   help="states entering the readout: every step after washout (all), last, or mean")
    g.add_argument("--washout", type=int, default=r.washout, help="initial steps dropped (default %(default)s)")
    g.add_argument("--no-readout-bias", dest="readout_bias", action="store_false",
                   help="no constant-1 input (readout bias) appended to the states")


def add_privacy_arguments(parser: argparse.ArgumentParser) -> None:
    """The privacy flags (:class:`~tff_esn.privacy.config.PrivacyConfig`)."""
    g = parser.add_argument_group("privacy (incfed, fedip, fedavg, fedcurv, pfedrr, partial-incfed; DP of pfedrr "
                                  "and partial-incfed: --dp-model local)")
    g.add_argument("--secure-aggregation", action="store_true",
                   help="sum the clients' updates with TFF's secure sum (fixed-point encoding)")
    g.add_argument("--secure-bits", type=int, default=DEFAULT_SECURE_BITS,
                   help="closed form: bit width of the secure sum; each client value gets bits − ⌈log₂ K⌉ "
                        "(default %(default)s)")
    g.add_argument("--secure-range", type=float, default=None,
                   help="closed form: values are clipped to ±R before encoding (default: the largest client's "
                        "state count, which bounds every entry of A, B, n, plus 8 σ of the clients' DP noise)")
    g.add_argument("--dp-epsilon", type=float, default=None, help="target ε of the Gaussian mechanism")
    g.add_argument("--dp-noise-multiplier", type=float, default=None,
                   help="noise multiplier z instead of --dp-epsilon (ε is then reported)")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="δ (default %(default)s)")
    g.add_argument("--dp-clip", type=float, default=None,
                   help="closed form: state norm bound C (default √N_F: no state changes); FedAvg/FedCurv: the "
                        "clients' update norm bound (default 0.1; initial value with --dp-adaptive-clip)")
    g.add_argument("--dp-ip-clip", type=float, default=DEFAULT_IP_CLIP,
                   help="fedip: L2 norm bound of a client's (Δg, Δb) update per round (default %(default)s)")
    g.add_argument("--dp-model", choices=MODELS, default="central",
                   help="closed form: noise added by the server (central), by each client in full (local) or "
                        "in shares σ/√K (distributed; use with --secure-aggregation)")
    g.add_argument("--dp-seed", type=int, default=None,
                   help="seed of the DP noise (default: --seed; FedAvg/FedCurv: also the clipped-count noise "
                        "of --dp-adaptive-clip)")
    g.add_argument("--dp-adaptive-clip", action="store_true",
                   help="FedAvg/FedCurv: adaptive clipping (median update norm) instead of a fixed clip")


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """This algorithm has only the common flags."""


def _backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default="tff",
                        help="TFF federated computation (default) or the plain numpy path")


def _subround_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--subround-size", type=int, default=None, metavar="N",
                        help="stream the training clients in subrounds of N (tff_esn.closed_form.streaming: memory of "
                             "one subround, same readout); default: all clients in one computation")


def _incfed_arguments(parser: argparse.ArgumentParser) -> None:
    _backend_argument(parser)
    parser.add_argument("--l2-per-client", action="store_true",
                        help="each client adds λI to its B_c (IncFed eq. 7: the server's λ is C·λ)")
    _subround_argument(parser)


def _partial_arguments(parser: argparse.ArgumentParser) -> None:
    d = PartialIncFedConfig()
    parser.add_argument("--k", type=int, default=d.k,
                        help="features each client uploads (default: the thesis' 1.5/|C| of N_F)")
    parser.add_argument("--alpha", type=float, default=d.alpha,
                        help="share of the k features chosen by importance, the rest at random "
                             "(thesis Table B.2: 0.3; 0 = the Random strategy)")
    parser.add_argument("--mask", choices=MASKS, default=d.mask,
                        help="reading of thesis eq. B.16: nystrom (default) = each client's B_c, A_c completed "
                             "from its k columns (symmetric PSD, Cholesky); block = D B_c D, the selected rows and "
                             "columns (PSD; collapses on offset-dominated states such as OSULeaf mean states); "
                             "columns = B_c D, the literal reading (non-symmetric, LU; ill-conditioned, near chance)")


def _pfedrr_arguments(parser: argparse.ArgumentParser) -> None:
    d = PFedRRConfig()
    parser.add_argument("--tau", type=float, default=d.tau,
                        help="importance threshold τ ∈ (0, 1]: units with scaled importance ≥ 1 − τ are kept")
    parser.add_argument("--reading", choices=READINGS, default=d.reading,
                        help="consistent (default): A_c's columns of unselected units are zeroed like B̃_c's; "
                             "literal: A_c sent whole as pFedRR eq. 2 (collapses to one class when few units are "
                             "kept on OSULeaf)")
    _subround_argument(parser)


def _fedip_arguments(parser: argparse.ArgumentParser) -> None:
    _backend_argument(parser)
    d, f = IPConfig(), FedIPConfig()
    parser.add_argument("--rounds", type=int, default=f.rounds, help="FedIP rounds (default %(default)s)")
    parser.add_argument("--ip-mu", type=float, default=d.mu, help="IP target mean μ (FedIP Table 1: 0)")
    parser.add_argument("--ip-sigma", type=float, default=d.sigma, help="IP target std σ (FedIP: 0.005–0.15)")
    parser.add_argument("--ip-eta", type=float, default=d.eta,
                        help="IP learning rate η (default %(default)s; FedIP Table 1: 0.01)")
    parser.add_argument("--ip-epochs", type=int, default=d.epochs, help="local IP epochs per round (FedIP: 3–10)")
    parser.add_argument("--ip-batch-size", type=int, default=d.batch_size,
                        help="sequences per online IP step (default %(default)s)")
    parser.add_argument("--ip-min-gain", type=float, default=d.min_gain,
                        help="gain floor after every IP step (projection onto g > 0; default %(default)s)")
    parser.add_argument("--ip-literal-gain", dest="ip_min_gain", action="store_const", const=None,
                        help="the literal IP rule, whose gain can cross zero")
    parser.add_argument("--l2-scale", choices=L2_SCALES, default=f.l2_scale,
                        help="state (default): λ is on the unadapted reservoir's state scale and follows the "
                             "adapted states' (λ × adapted/initial state variance); absolute: λ as given")


def _alignment_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, default=AlignmentConfig().alpha,
                        help="interpolation weight toward the shared reservoir, in [0, 1] (1 = IncFed; default "
                             "%(default)s: alignment only works near full homogenisation)")
    parser.add_argument("--rescale", action="store_true",
                        help="scale the interpolated Ŵ and W_in back to the target's ρ and norm (default: the literal "
                             "interpolation, under which both shrink)")


def class_weight(text: str) -> tuple[float, ...] | str:
    """``--class-weight``: ``balanced`` or one number per class ``W0,W1,…``."""
    if text == "balanced":
        return text
    try:
        weights = tuple(float(v) for v in text.split(","))
    except ValueError:
        weights = ()
    if len(weights) < 2:
        raise argparse.ArgumentTypeError(f"expected 'balanced' or one number per class 'W0,W1,…' (e.g. 12,88), "
                                         f"got {text!r}")
    return weights


def _noisy_clients(text: str) -> tuple[str, ...] | None:
    return tuple(c.strip() for c in text.split(",") if c.strip()) or None


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The thesis model's flags (Table 6.2); the reservoir defaults become Table 6.2's."""
    parser.set_defaults(units=THESIS_RESERVOIR.units, spectral_radius=THESIS_RESERVOIR.spectral_radius,
                        leaky=THESIS_RESERVOIR.leaky, pipeline="thesis")
    d = ThesisModelConfig()
    g = parser.add_argument_group("thesis model (Table 6.2)")
    g.add_argument("--client-lr", type=float, default=d.learning_rate,
                   help="Adam learning rate η of the (client) training (default %(default)s)")
    g.add_argument("--batch-size", type=int, default=d.batch_size, help="sequences per batch (default %(default)s)")
    g.add_argument("--epochs", type=int, default=d.epochs, help="(local) epochs per round (default %(default)s)")
    g.add_argument("--class-weight", type=class_weight, default=d.class_weight, metavar="W0,W1,…|balanced",
                   help="loss weight of each class, or 'balanced': n / (K·n_k) from the training labels (default "
                        "12,88)")


def _central_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--patience", type=int, default=0,
                        help="n ≥ 1: train on the training clients, stop when the validation loss has not improved "
                             "for n epochs and keep the best epoch (default 0: the design set for --epochs)")


def add_federated_arguments(parser: argparse.ArgumentParser) -> None:
    """The federation's flags (thesis §6.1–6.2)."""
    add_model_arguments(parser)
    d = FedAvgConfig(out="-")
    g = parser.add_argument_group("federation (thesis §6.1–6.2)")
    g.add_argument("--server-lr", type=float, default=d.server_lr,
                   help="server SGD learning rate: 1.0, 0.1, 0.01, 0.001 in the thesis (default %(default)s)")
    g.add_argument("--rounds", type=int, default=d.rounds, help="rounds (default %(default)s)")
    g.add_argument("--clients-per-round", type=int, default=d.clients_per_round,
                   help="clients sampled per round (default %(default)s)")
    g.add_argument("--noise-std", type=float, default=d.noise_std,
                   help="std of the Gaussian noise on the clients' inputs (default %(default)s)")
    g.add_argument("--noisy-clients", type=_noisy_clients, default=None, metavar="ID,ID",
                   help="only these training clients get noise (default: all)")
    g.add_argument("--reservoir", choices=RESERVOIR_MODES, default=d.reservoirs,
                   help="clients use the server's reservoir (same) or their own (different)")
    g.add_argument("--states", choices=STATE_SOURCES, default=d.states,
                   help="cached: readout trained on states harvested once (noise fixed per client); "
                        "faithful: reservoir inside the model, noise redrawn every round")
    g.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep each client's order")
    g.add_argument("--keep-best", action="store_true",
                   help="the result is the round with the best validation macro-F1 (default: the last round)")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its last round")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    g.add_argument("--discriminator", default=None, metavar="PATH",
                   help="client filter (thesis Alg. 3–4, FedAvg/FedCurv+Disc): a discriminator folder, loaded by the "
                        "'discriminator' entry point of the tff_esn.client_filters group")
    g.add_argument("--discriminator-threshold", type=float, default=d.discriminator_threshold,
                   help="accept a client when the discriminator's P(real) exceeds this (default %(default)s)")


def add_fedcurv_arguments(parser: argparse.ArgumentParser) -> None:
    add_federated_arguments(parser)
    parser.add_argument("--penalty", type=float, default=FedCurvConfig(out="-").penalty,
                        help="FedCurv penalty weight λ (thesis Listing 3.7: %(default)s)")


#: Each algorithm's own flags (beside the common, data, privacy and worker flags).
ALGORITHM_FLAGS: dict[str, AddFlags] = {
    "centralized": _no_arguments, "incfed": _incfed_arguments, "fedavg-ridge": _no_arguments,
    "partial-incfed": _partial_arguments, "pfedrr": _pfedrr_arguments, "fedip": _fedip_arguments,
    "ensemble": _no_arguments, "alignment": _alignment_arguments,
    "fedavg": add_federated_arguments, "fedcurv": add_fedcurv_arguments, "thesis-central": _central_arguments,
}


def config_of(algo: Algorithm, args: argparse.Namespace):
    """``algo``'s config from the parsed flags; a config that refuses them is a :class:`UsageError`."""
    flags = {k: v for k, v in vars(args).items() if not callable(v)}
    try:
        config = config_from_flags(algo.config, flags, strict=False)
        check_privacy(algo.name, config.privacy, backend=getattr(config, "backend", "tff"))
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None
    return config
