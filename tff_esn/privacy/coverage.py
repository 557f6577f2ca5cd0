"""What each privacy mechanism covers and what is public by design: the one declaration.

Every value a client sends to the server is either covered by the run's mechanism (secure
aggregation: summed by a ``federated_secure_*`` intrinsic; DP: clipped and noised by the
Gaussian mechanism whose ε the run reports) or listed in :data:`PUBLIC` with the reason it
may be released as it is. :func:`declaration` is what ``metrics.json``'s privacy section
says (``covers``, ``public``); :mod:`tff_esn.privacy.audit` checks the built TFF
computations against the same :data:`PUBLIC` list and the markers below.

**Markers.** The audit recognizes, inside the TensorFlow graphs of a computation:

* a DP clip by a node name containing one of :data:`CLIP_MARKERS` (TFF/tfp's
  ``GaussianSumQuery`` clips with ``tf.clip_by_global_norm``; the closed form's
  :func:`tff_esn.privacy.dp_stats.clip_rows` runs under the name scope ``dp_clip``);
* Gaussian noise by an op in :data:`NOISE_OPS`;
* a value released as public by a node named ``public__<name>`` (:func:`public`), where
  ``<name>`` must be a key of :data:`PUBLIC`; TFF's ``SecureSumFactory`` computes its
  clipped counts by a graph that only compares a value with the bound and casts it, which
  the audit reads as ``public__secure_clipped_count``.

Light: importing this module imports neither TensorFlow nor TFF.
"""

from __future__ import annotations

from tff_esn.runtime import load_tff

CLIP_MARKERS = ("clip_by_global_norm", "dp_clip")
NOISE_OPS = frozenset({"StatelessRandomNormalV2", "StatelessRandomNormal", "RandomStandardNormal"})
PUBLIC_PREFIX = "public__"

PUBLIC = {
    "accepted_clients": "the count of sampled clients whose update was kept (finite, and accepted by the client "
                        "filter of thesis Alg. 3-4 if any; Fig. 6.13's measurement), released without noise: it "
                        "tells how many clients were kept, never which; secure-summed under secure aggregation, not "
                        "covered by the DP ε",
    "clients": "the number of clients taking part in a round: a constant 1 per client, no client data",
    "secure_clipped_count": "the secure sum's count of values beyond its range (TFF's SecureSumFactory "
                            "measurements, the closed form's clipped count): 0 when the range bounds what the "
                            "clients send — DP records clipped to L2 norm C have every coordinate in [−C, C], the "
                            "derived closed-form range bounds the clipped statistics; with a given --secure-range "
                            "it tells how many values exceeded it",
}

ADAPTIVE_FEDCURV = ("fedcurv with --dp-adaptive-clip: the curvature terms (u, v) need the fixed clip of the joint "
                    "release; drop --dp-adaptive-clip.")
"""The one combination refused rather than covered: adaptive clipping has no joint release of FedCurv's
update and (u, v) here (:mod:`tff_esn.privacy.learning`)."""

_LEARNING_COVERS = {
    "fedavg": "the model updates (readout kernel and bias)",
    "fedcurv": "the model updates (readout kernel and bias) and the curvature terms (u_b, v_b) of thesis Alg. 2, "
               "one joint release per round under DP",
}
_CLOSED_FORM_COVERS = {
    "incfed": "the readout statistics (A, B, n)",
    "fedip": "FedIP's (Δg, Δb) rounds and the readout statistics (A, B, n)",
    "pfedrr": "the uploads (A_c D_c, B̃_c, n_c) of I-pFedRR, R-pFedRR and FedRR (three secure sums); under secure "
              "aggregation B̃_c is uploaded dense (zeros outside the selection); under DP each client noises its "
              "full (A_c, B_c, n_c) before ranking and masking",
    "partial-incfed": "the masked statistics (A_c*, B_c*, n_c) of eq. B.16; under secure aggregation each client "
                      "completes/zero-fills its own and uploads them dense; under DP each client noises its full "
                      "(A_c, B_c, n_c) before masking or completing",
}
ALGORITHMS = (*_CLOSED_FORM_COVERS, *_LEARNING_COVERS)


def public_values(algorithm: str, *, secure: bool, own_client_work: bool = False) -> list[str]:
    """Names (keys of :data:`PUBLIC`) of the values ``algorithm`` releases without protection:
    FedCurv's client work, and FedAvg's when it runs ours (``own_client_work``: a client filter
    or the clients' own reservoirs), count the kept clients."""
    names = ["clients"] + (["secure_clipped_count"] if secure else [])
    if algorithm == "fedcurv" or (algorithm == "fedavg" and own_client_work):
        names.append("accepted_clients")
    return names


def declaration(algorithm: str, *, secure: bool, dp: bool, own_client_work: bool = False) -> dict:
    """``covers``, ``public`` (name → reason) and ``not_sent`` of ``algorithm`` under the settings."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"{algorithm}: no privacy declaration (known: {', '.join(ALGORITHMS)}).")
    learning = algorithm in _LEARNING_COVERS
    covers = (_LEARNING_COVERS if learning else _CLOSED_FORM_COVERS)[algorithm]
    not_sent = []
    if learning and secure and not dp:
        covers += "; the training metrics (secure_sum_then_finalize)"
    if learning and dp:
        not_sent.append("the training metrics (loss sums, example counts): not clipped or noised, so DP clients "
                        "do not send them")
    out = {"covers": covers,
           "public": {name: PUBLIC[name] for name in public_values(algorithm, secure=secure,
                                                                           own_client_work=own_client_work)}}
    if not_sent:
        out["not_sent"] = not_sent
    return out


def public(value, name: str):
    """``value@CLIENTS`` passed through an identity named ``public__<name>``: the mark by which
    the audit knows the code releases it as public (``name`` must be a key of :data:`PUBLIC`)."""
    import tensorflow as tf
    tff = load_tff()

    if name not in PUBLIC:
        raise ValueError(f"public value {name!r}: not in the allow-list {sorted(PUBLIC)}; add it with its reason.")

    @tff.tensorflow.computation(value.type_signature.member)
    def mark(v):
        return tf.nest.map_structure(lambda t: tf.identity(t, name=PUBLIC_PREFIX + name), v)

    return tff.federated_map(mark, value)
