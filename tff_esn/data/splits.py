"""The named client-wise splits of the thesis and the papers.

Fixed groups come from the end of the natural client order (test last, then validation, then extra);
the rest train. ``npz`` uses the file's ``split`` or a seeded rule; ``train_fraction`` keeps
``ceil(fraction · n_train)`` seeded training clients. Each split records its ``rule``.
"""

from __future__ import annotations

import dataclasses
import math
import re

from tff_esn.common import run_warnings, streams
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.common.validation import is_finite


@dataclasses.dataclass(frozen=True)
class SplitSpec:
    """Sizes of a split's fixed groups; the remaining clients train."""

    val: int
    test: int
    extra: tuple[tuple[str, int], ...] = ()
    reference: str = ""


SPLITS: dict[str, SplitSpec] = {
    "thesis-primal": SplitSpec(4, 1, reference="thesis §6.1 (10/4/1)"),
    "thesis-discriminative": SplitSpec(2, 1, (("discriminator", 2),), "thesis §6.1 (10/2/1 + 2)"),
    "incfed-wesad": SplitSpec(3, 3, reference="IncFed §IV-a (3 + 3 fixed)"),
    "incfed-hhar": SplitSpec(2, 2, reference="IncFed §IV-b (2 + 2 fixed)"),
    "pfedrr-wesad": SplitSpec(3, 3, reference="pFedRR §3 (9-3-3)"),
    "pfedrr-hhar": SplitSpec(2, 2, reference="pFedRR §3 (5-2-2)"),
    "fedip-wesad": SplitSpec(3, 3, reference="FedIP §3 (9-3-3)"),
    "fedip-hhar": SplitSpec(2, 2, reference="FedIP §3 (5-2-2)"),
}
SPLIT_NAMES = (*SPLITS, "npz")


def natural_order(ids) -> list[str]:
    """``S2, S3, …, S10`` rather than ``S10, S2``."""
    return sorted(ids, key=lambda s: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)])


def _subsample(train: list[str], train_fraction: float, seed: int) -> tuple[str, ...]:
    if train_fraction == 1:
        return tuple(train)
    k = max(1, math.ceil(train_fraction * len(train) - 1e-9))
    order = streams.TRAIN_FRACTION.generator(seed, len(train)).permutation(len(train))
    return tuple(train[i] for i in sorted(order[:k]))


def _fraction_rule(train_fraction: float, seed: int) -> str:
    return "" if train_fraction == 1 else f"; {train_fraction:g} of the training clients drawn with seed {seed}"


def _npz_split(dataset: SequenceDataset, train_fraction: float, seed: int) -> Split:
    ids = natural_order(dataset.client_ids)
    if dataset.groups:
        missing = [c for c in ids if c not in dataset.groups]
        if missing:
            raise DataError(f"{dataset.source}: split 'npz': clients {missing} have no split group.")
        groups = {g: [c for c in ids if dataset.groups[c] == g] for g in ("train", "val", "test")}
        return Split("npz", _subsample(groups["train"], train_fraction, seed), tuple(groups["val"]),
                     tuple(groups["test"]), rule="the data's split column" + _fraction_rule(train_fraction, seed))
    named = [c for c in ids if re.match(r"(train|validation|valid|val|test)(?![a-z])", c, re.I)]
    if named:
        run_warnings.warn(f"{dataset.source}: client ids {named[:5]} look like group names, but the data has no "
                          "split column: the clients are split by the seeded rule (add a 'split' array to choose "
                          "the groups).", stacklevel=4)
    n_test, n_val = (max(1, len(ids) // 5) if len(ids) >= low else 0 for low in (2, 3))
    order = streams.NPZ_SPLIT.generator(seed, len(ids)).permutation(len(ids))
    shuffled = [ids[i] for i in order]
    test, val = set(shuffled[:n_test]), set(shuffled[n_test:n_test + n_val])
    train = [c for c in ids if c not in test and c not in val]
    rule = (f"seeded shuffle of the clients (seed {seed}): {n_test} test, {n_val} validation, {len(train)} train"
            + _fraction_rule(train_fraction, seed))
    return Split("npz", _subsample(train, train_fraction, seed), tuple(c for c in ids if c in val),
                 tuple(c for c in ids if c in test), rule=rule)


def _fixed_split(name: str, ids: list[str], spec: SplitSpec, train_fraction: float, seed: int) -> Split:
    fixed = spec.val + spec.test + sum(n for _, n in spec.extra)
    if len(ids) <= fixed:
        raise DataError(f"split {name!r} needs more than {fixed} clients ({spec.val} validation, {spec.test} test"
                         f"{''.join(f', {n} {g}' for g, n in spec.extra)}) and at least one to train; "
                         f"the data set has {len(ids)}: {ids}.")
    test = ids[len(ids) - spec.test:]
    val = ids[len(ids) - spec.test - spec.val: len(ids) - spec.test]
    end = len(ids) - spec.test - spec.val
    extra = {}
    for group, n in reversed(spec.extra):
        extra[group] = tuple(ids[end - n: end])
        end -= n
    rule = f"named split {name!r} ({spec.reference}): fixed groups at the end of the natural order" \
        + _fraction_rule(train_fraction, seed)
    return Split(name, _subsample(ids[:end], train_fraction, seed), tuple(val), tuple(test), extra, rule=rule)


def get_split(name: str, dataset: SequenceDataset, *, train_fraction: float = 1.0, seed: int = 0) -> Split:
    """Split ``name`` (:data:`SPLIT_NAMES`) keeping a fraction in (0, 1] of training clients chosen by ``seed``."""
    if name not in SPLIT_NAMES or not (is_finite(train_fraction) and 0 < train_fraction <= 1):
        raise ValueError(f"split: expected one of {SPLIT_NAMES} and train_fraction a number in (0, 1], got "
                         f"{name!r}, {train_fraction!r}.")
    if name == "npz":
        return _npz_split(dataset, train_fraction, seed)
    return _fixed_split(name, natural_order(dataset.client_ids), SPLITS[name], train_fraction, seed)
