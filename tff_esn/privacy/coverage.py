"""What each privacy mechanism covers and what is public by design (:func:`declaration`, :data:`PUBLIC`, the marks
:mod:`tff_esn.privacy.audit` checks), and what a DP run may write (:data:`OUTPUTS`). Imports no TensorFlow."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tff_esn.common.run_warnings import warn

from tff_esn.runtime import load_tff

if TYPE_CHECKING:
    from tff_esn.privacy.config import PrivacySupport

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

_TRAINING_RECORDS = "computed from the training clients' records outside the DP mechanism"
_SELECTION = ("who took part in a round, or how many: under secret Poisson sampling the selection is part of the "
              "mechanism's randomness, and publishing it (or its size) voids the amplification by sampling")
_EVALUATION = ("measured on the validation/test clients, the evaluator's held-out data: not training clients, not "
               "protected by the ε (which covers the training clients' records)")
_TIMING = ("wall time, which grows with the number of clients that trained (a retrace the first time a count "
           "occurs): under secret Poisson sampling it tells the secret sample size, so it is withheld with the "
           "selection")
WITHHELD, PUBLIC_OUTPUT, COVERED, SELECTION, TIMING = "withheld", "public", "covered", "selection", "timing"

OUTPUTS: dict[str, tuple[str, str]] = {
    "train": (WITHHELD, "the model's metrics on the training clients' pooled data: " + _TRAINING_RECORDS),
    "train.*": (WITHHELD, "the model's metrics on the training clients' pooled data: " + _TRAINING_RECORDS),
    "baselines": (WITHHELD, "baselines fitted on the training clients' pooled records: " + _TRAINING_RECORDS),
    "partition.sizes": (WITHHELD, "each client's record count: " + _TRAINING_RECORDS),
    "partition.label_histogram": (WITHHELD, "each client's label counts: " + _TRAINING_RECORDS),
    "extra.states": (WITHHELD, "saturation of the training clients' reservoir states: " + _TRAINING_RECORDS),
    "extra.rounds[].train_loss": (WITHHELD, "DP clients send no training metrics (the column would be empty)"),
    "extra.rounds[].sampled": (SELECTION, _SELECTION),
    "extra.rounds[].clients": (SELECTION, _SELECTION),
    "extra.rounds[].accepted_clients": (SELECTION, _SELECTION),
    "extra.rounds[].clean_clients": (SELECTION, _SELECTION),
    "extra.accepted_clients": (SELECTION, _SELECTION),
    "extra.rounds[].seconds": (TIMING, "a round's " + _TIMING),
    "seconds": (TIMING, "the run's " + _TIMING),
    "extra.*.train": (WITHHELD, "a variant's metrics on the training clients' pooled data: " + _TRAINING_RECORDS),
    "extra.state_std_median": (WITHHELD, "spread of the training clients' adapted states: " + _TRAINING_RECORDS),
    "extra.weights": (COVERED, "the model: post-processing of the DP releases"),
    "extra.gain_*": (COVERED, "FedIP's gains: post-processing of the DP (Δg, Δb) rounds"),
    "extra.bias_mean": (COVERED, "FedIP's biases: post-processing of the DP (Δg, Δb) rounds"),
    "extra.l2_effective": (COVERED, "λ: the stated value (no rescaling on the clients' statistics under DP)"),
    "extra.percent_units": (COVERED, "pFedRR's selected units: post-processing of each client's locally noised "
                            "statistics"),
    "extra.*.val": (PUBLIC_OUTPUT, _EVALUATION),
    "extra.*.test": (PUBLIC_OUTPUT, _EVALUATION),
    "val": (PUBLIC_OUTPUT, _EVALUATION),
    "free_run": (PUBLIC_OUTPUT, "the model's free runs on the validation/test series: " + _EVALUATION),
    "test": (PUBLIC_OUTPUT, _EVALUATION),
    "extra.rounds[].val_*": (PUBLIC_OUTPUT, _EVALUATION),
    "extra.rounds[].test_*": (PUBLIC_OUTPUT, _EVALUATION),
    "extra.kept_round": (PUBLIC_OUTPUT, "the round chosen on the validation clients: " + _EVALUATION),
    "extra.rounds_run": (PUBLIC_OUTPUT, "the rounds run, stopped on the validation clients' scores: " + _EVALUATION),
    "result_check": (PUBLIC_OUTPUT, "flags of the model's predictions on the validation/test clients (under DP "
                     "without the majority-class comparison: that class is the training clients' most frequent "
                     "label): " + _EVALUATION),
    "extra.standardization": (WITHHELD, "the training clients' feature means and variances: " + _TRAINING_RECORDS),
    "validation": (WITHHELD, "the sizes of validation folds carved from the training clients: " + _TRAINING_RECORDS),
    "extra.train_clients": (PUBLIC_OUTPUT, "the number of training clients: the federation's size, no client data"),
}
"""Every client-derived value a run writes (a dotted path, ``[]`` every list item, ``*`` a wildcard) and
how a DP run handles it: withheld, selection and timing (written when the selection is public), covered or public."""


NOT_CLIENT_DERIVED: dict[str, str] = {
    **dict.fromkeys(("algorithm", "data", "split", "split_rule", "config", "cli", "versions", "extra.backend",
                     "extra.n_features", "extra.class_weight",
                     "extra.rounds[].round", "partition.partitioner", "partition.seed", "partition.groups",
                     "partition.label_names", "l2_selection", "washout_selection", "selection", "extra.selection", "clients", "extra.tau", "extra.reading", "extra.k",
                     "extra.alpha", "extra.mask", "extra.rounds_csv", "extra.resumes",
                     "extra.clients_per_round"),
                    "the run's configuration, split (which client is in which group) and environment (under "
                    "privacy settings nothing is chosen on client data: λ, the state mode, the reservoir, the "
                    "learning rate and the penalty are the stated defaults, and FedAvg's class weights are "
                    "explicit or uniform)"),
    **dict.fromkeys(("communication", "extra.rounds[].up_floats_per_client", "extra.rounds[].down_floats_per_client"),
                    "floats per client: a function of the model's shapes"),
    **dict.fromkeys(("privacy", "secure_aggregation"), "the mechanism's parameters and declaration"),
    "standardization": ("whether inputs and targets were standardised: under DP only by stated public ranges "
                        "(--series-range, configuration: no client data); never by the training clients' means and "
                        "variances, which would be released outside the mechanism (--standardize on is refused)"),
    "extends": "the saved model a run extends (--add-to): its folder, client count and λ, and its run's "
               "configuration, selection and privacy declaration",
    "reservoir_graph": "the graph metrics of the configured reservoir's Ŵ: a function of the configuration",
    **dict.fromkeys(("partition.clients",), "the number of clients"),
    "extra.init_from": "the saved model a run started from: its folder and provenance (algorithm, data, split, "
                       "configuration, privacy declaration), as its own run published them; the ε covers this run's "
                       "releases, the starting model is an input (public, or private under its own run's ε)",
    "warnings": "messages about the inputs and settings, written as said (a warning about the data can name a "
                "client or a count: read them before sharing a DP run's outputs)",
}
"""The values of ``metrics.json`` that carry no client data, with the reason."""


MODEL_OUTPUTS: dict[str, tuple[str, str]] = {
    "model.arrays.m*.reservoir.*": (COVERED, "the reservoir: drawn from the configuration and --seed (no client "
                                    "data); FedIP's gains and biases: post-processing of its DP (Δg, Δb) rounds"),
    "model.arrays.m*.readout.weights": (COVERED, "the released readout: post-processing of the DP releases"),
    "model.arrays.m*.readout.bias": (COVERED, "the released readout: post-processing of the DP releases"),
    "model.arrays.m*.readout.mean": (WITHHELD, "the training clients' state means: " + _TRAINING_RECORDS + " (a DP "
                                     "run trains its readout on the raw states)"),
    "model.arrays.m*.readout.scale": (WITHHELD, "the training clients' state deviations: " + _TRAINING_RECORDS),
    "model.arrays.inputs.*": (WITHHELD, "the training clients' input means and deviations: " + _TRAINING_RECORDS
                              + " (written from stated public ranges, --series-range: configuration)"),
    "model.arrays.outputs.*": (WITHHELD, "the training clients' target means and deviations: " + _TRAINING_RECORDS
                               + " (written from stated public ranges, --series-range: configuration)"),
    "model.arrays.stats.*": (COVERED, "the aggregate ridge statistics a model keeps (--keep-stats): the (A, B) the "
                             "mechanism released, noised and before the eigenvalue floor, never the raw sums"),
    "model.stats": (COVERED, "the kept statistics' counts as released: under DP the noised sums"),
    "model.members[].size": (WITHHELD, "an ensemble member's weight n_c / n: " + _TRAINING_RECORDS + " (1 for a "
                             "model of one reservoir, as every DP run trains)"),
}
"""What a run's ``model/`` folder holds that may derive from the training clients (``model.arrays.NAME``: an array
of ``arrays.npz``; ``model.KEY``: an entry of ``model.json``) and how a DP run handles it."""

MODEL_NOT_CLIENT_DERIVED: dict[str, str] = {
    **dict.fromkeys(("model.format", "model.version", "model.task", "model.feature_names", "model.label_names",
                     "model.per_step", "model.spec", "model.seed", "model.inputs", "model.outputs", "model.arrays_sha256",
                     "model.members[].reservoir", "model.members[].readout", "model.channels"),
                    "the model's format, the data's schema (task, feature and label names, the channels forecast) and "
                    "the run's configuration (reservoir, state mode, washout, readout kind and activation)"),
    "model.provenance": "the run's algorithm, data, split, configuration and privacy declaration, as metrics.json "
                        "writes them",
    "model.metrics": "the metrics.json sections train, val and test, as published (a DP run withholds train)",
}
"""The entries of a ``model/`` folder that carry no client data (or only what ``metrics.json`` publishes)."""


def _entry(path: str, table: dict):
    """The value of ``table`` whose pattern matches ``path`` or its nearest parent (``None``: none)."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        for pattern, entry in table.items():
            if fnmatch.fnmatchcase(prefix, pattern):
                return entry
    return None


def withheld(path: str, *, selection_published: bool, table: dict[str, tuple[str, str]] | None = None) -> bool:
    """Whether a DP run leaves ``path`` out of its outputs (``table``: :data:`OUTPUTS`, or :data:`MODEL_OUTPUTS`)."""
    entry = _entry(path, OUTPUTS if table is None else table)
    return entry is not None and (entry[0] == WITHHELD or (entry[0] in (SELECTION, TIMING) and not selection_published))


def _leaves(node, path: str = ""):
    """The dotted paths of ``node``'s leaves (``[]`` for a list's items; an empty dict or list is a leaf)."""
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list) and node and all(isinstance(v, (dict, list)) for v in node):
        for v in node:
            yield from _leaves(v, path + "[]")
    else:
        yield path


def undeclared(record: dict) -> list[str]:
    """The paths of a DP run's ``record`` declared nowhere, and those written although withheld."""
    selection_published = ((record.get("privacy") or {}).get("sampling") or {}).get("selection_published", True)
    out = []
    for path in dict.fromkeys(_leaves(record)):
        if withheld(path, selection_published=selection_published):
            out.append(f"{path} (withheld under DP, but written)")
        elif _entry(path, OUTPUTS) is None and _entry(path, NOT_CLIENT_DERIVED) is None:
            out.append(path)
    return out


def published_row(row: dict, *, dp: bool, selection_published: bool, prefix: str = "extra.rounds[]") -> dict:
    """``row`` (one ``rounds.csv`` row / ``extra.rounds`` item) without what a DP run withholds."""
    if not dp:
        return row
    return {k: v for k, v in row.items() if not withheld(f"{prefix}.{k}", selection_published=selection_published)}


def publish(record: dict) -> dict:
    """``record`` as a DP run may write it: the withheld :data:`OUTPUTS` removed and the declaration added."""
    privacy = record.get("privacy") or {}
    if privacy.get("mechanism", "none") == "none":
        return record
    selection_published = (privacy.get("sampling") or {}).get("selection_published", True)

    def prune(node, path: str):
        if isinstance(node, dict):
            return {k: prune(v, f"{path}.{k}" if path else k) for k, v in node.items()
                    if not withheld(f"{path}.{k}" if path else k, selection_published=selection_published)}
        if isinstance(node, list):
            return [prune(v, path + "[]") for v in node]
        return node

    out = prune(record, "")
    said = {"withheld": {}, "public": {}, "covered_outputs": {}}
    for pattern, (kind, reason) in (*OUTPUTS.items(), *MODEL_OUTPUTS.items()):  # metrics.json's, then model/'s
        if kind == WITHHELD or (kind in (SELECTION, TIMING) and not selection_published):
            said["withheld"][pattern] = reason
        elif kind == SELECTION:
            said["public"][pattern] = "the selection comes from --seed and is public; ε claims no amplification"
        elif kind == TIMING:
            said["public"][pattern] = "wall time of a public selection"
        else:
            said["public" if kind == PUBLIC_OUTPUT else "covered_outputs"][pattern] = reason
    out["privacy"] = {**out["privacy"], "withheld": said["withheld"], "covered_outputs": said["covered_outputs"],
                      "public": {**out["privacy"].get("public", {}), **said["public"]}}
    return out


FILE_ORIGIN = "file"
"""The origin of a setting read from a hyper-parameter file (``--hparams``) in ``metrics.json``'s ``config``."""


def selection_declared(privacy: dict, config: Mapping[str, Mapping[str, Any]]) -> dict:
    """A DP run's ``privacy`` section with ``selection_outside_epsilon``: whether settings came from a file
    (``--hparams``), chosen by a search that is no DP mechanism, so on the clients outside the ε (a warning)."""
    chosen = sorted(name for name, entry in config.items() if entry.get("origin") == FILE_ORIGIN)
    if chosen:
        warn(f"DP: {', '.join(chosen)} came from a hyper-parameter file (--hparams); if a search chose them on these "
             "clients, that choice used their data outside the DP mechanism and is not covered by the ε "
             "(metrics.json privacy.selection_outside_epsilon)")
    return {**privacy, "selection_outside_epsilon": bool(chosen), "settings_from_file": chosen}


def declaration(support: PrivacySupport, *, secure: bool, dp: bool, own_client_work: bool = False,
                selection_published: bool = True) -> dict:
    """``covers``, ``public`` (name → reason) and ``not_sent`` of privacy ``support`` under the settings."""
    covers, not_sent = support.covers, []
    if support.training_metrics and secure and not dp:
        covers += "; the training metrics (secure_sum_then_finalize)"
    if support.training_metrics and dp:
        not_sent.append("the training metrics (loss sums, example counts): not clipped or noised, so DP clients "
                        "do not send them")
    names = ["clients"] + (["secure_clipped_count"] if secure else [])
    if (support.own_client_work or own_client_work) and (selection_published or not dp):
        names.append("accepted_clients")
    out = {"covers": covers, "public": {name: PUBLIC[name] for name in names}}
    if not_sent:
        out["not_sent"] = not_sent
    return out


def public(value, name: str):
    """``value@CLIENTS`` through identity ``public__<name>``, the mark of a public release (``name`` in :data:`PUBLIC`)."""
    import tensorflow as tf
    tff = load_tff()

    if name not in PUBLIC:
        raise ValueError(f"public value {name!r}: not in the allow-list {sorted(PUBLIC)}; add it with its reason.")

    @tff.tensorflow.computation(value.type_signature.member)
    def mark(v):
        return tf.nest.map_structure(lambda t: tf.identity(t, name=PUBLIC_PREFIX + name), v)

    return tff.federated_map(mark, value)


def undeclared_model(folder: str | os.PathLike) -> list[str]:
    """The entries of a DP run's ``model/`` ``folder`` declared nowhere, and those written although withheld."""
    import json
    from pathlib import Path

    import numpy as np

    folder = Path(folder)
    header = json.loads((folder / "model.json").read_text())
    with np.load(folder / "arrays.npz", allow_pickle=False) as arrays:
        names = [f"model.arrays.{name}" for name in arrays.files]
    from tff_esn.runs.standardize import STATED_RULE

    unit_sizes = {m.get("size") for m in header.get("members", [])} == {1.0}
    stated = ((header.get("provenance") or {}).get("standardization") or {}).get("rule") == STATED_RULE
    out = []
    for path in [*dict.fromkeys(_leaves(header, "model")), *names]:
        if path == "model.members[].size" and unit_sizes:
            continue  # every member weighs 1: no client's size
        if stated and path.startswith(("model.arrays.inputs.", "model.arrays.outputs.")):
            continue  # the stated ranges' scaling: configuration, no client data
        if path.startswith("model.metrics.") and withheld(path[len("model.metrics."):], selection_published=True):
            out.append(f"{path} (withheld under DP, but written)")
        elif withheld(path, selection_published=True, table=MODEL_OUTPUTS):
            out.append(f"{path} (withheld under DP, but written)")
        elif _entry(path, MODEL_OUTPUTS) is None and _entry(path, MODEL_NOT_CLIENT_DERIVED) is None:
            out.append(path)
    return out
