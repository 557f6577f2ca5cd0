"""A resumable run's identity, stored with its checkpoint: ``--resume`` continues only the same run.

The identity (:func:`run_identity`) is the SHA-256 of the data as the run sees it (every client's sequences,
labels and lengths, the names, the task and the split's groups: another file, ``--seed``, split or partition
changes it), the algorithm and every setting except the :data:`RESUMABLE` ones. :func:`resume_changes`
compares a checkpoint's record with this invocation's and refuses any other difference in one line naming
each setting; the allowed changes are returned, to be recorded in ``metrics.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tff_esn.common.io import jsonable
from tff_esn.common.settings import flat_config
from tff_esn.runs.run_folder import CHECKPOINT, RunFolderError

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset, Split

RECORD_KEY = "run"
"""The checkpoint's entry holding the run's record (identity, resumable settings, privacy events, resumes)."""

RESUMABLE: dict[str, str] = {
    "rounds": "any number not below the rounds done (ε is composed over the rounds that ran)",
    "patience": "a larger number, when early stopping was on from the start (its best round is in the folder)",
    "progress": "the progress bar",
    "resume": "the resume switch itself",
    "out": "where the run folder is",
    "cache_dir": "where harvested states are cached (the same states)",
}
"""The settings a resumed run may change, and how (everything else is the run's identity)."""

DATA = "data"
CANDIDATE = "candidate"
"""The identity key of a selection candidate's run (``DIR/selection/LABEL``): its own learning rate and penalty."""
_MISSING = object()


class ResumeError(RunFolderError):
    """A ``--resume`` of a folder holding another run (one line naming each differing setting)."""


def data_digest(dataset: SequenceDataset, split: Split) -> str:
    """SHA-256 of ``dataset``'s clients in order (id, ``x``, ``y``, lengths), names, task and ``split``'s groups."""
    digest = hashlib.sha256()

    def add(value: Any) -> None:
        data = value.tobytes() if isinstance(value, np.ndarray) else json.dumps(jsonable(value)).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    add([dataset.n_classes, list(dataset.feature_names), list(dataset.label_names), dataset.task.kind,
         dataset.task.horizon, dataset.task.target, {g: list(ids) for g, ids in split.groups.items()}])
    for cid, client in dataset.clients.items():
        add([cid, list(client.x.shape), str(client.y.dtype), list(client.y.shape)])
        add(np.ascontiguousarray(client.x))
        add(np.ascontiguousarray(client.y))
        add(np.ascontiguousarray(client.steps))
    return digest.hexdigest()


def run_identity(config: Any, dataset: SequenceDataset, split: Split) -> dict[str, Any]:
    """``{"data": digest, "algorithm": name, setting: value}`` of every setting not in :data:`RESUMABLE`."""
    settings = {k: v for k, v in flat_config(config).items() if k not in RESUMABLE}
    algorithm = getattr(config, "algorithm", type(config).__name__)
    return jsonable({DATA: data_digest(dataset, split), "algorithm": algorithm, **settings})


def resumable_settings(config: Any) -> dict[str, Any]:
    """The values of the :data:`RESUMABLE` settings that shape what a resumed run does (rounds, patience)."""
    return {name: getattr(config, name) for name in ("rounds", "patience") if hasattr(config, name)}


def saved_record(out: str | os.PathLike) -> dict[str, Any] | None:
    """The run record in ``out``'s checkpoint (``None``: no checkpoint, ``{}``: a checkpoint without one)."""
    path = Path(out).expanduser() / CHECKPOINT
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as saved:
        return json.loads(str(saved[RECORD_KEY])) if RECORD_KEY in saved.files else {}


def _shown(name: str, old: Any, new: Any) -> str:
    if name == DATA:
        return (f"the data (its content, split or partition: sha256 {str(old)[:12]} → {str(new)[:12]}; the same "
                "file, --seed, split and partition flags give the same)")
    return f"--{name.replace('_', '-')} {_value(old)} → {_value(new)}"


def _value(value: Any) -> str:
    return "(not set)" if value is _MISSING else json.dumps(value) if isinstance(value, (str, list)) else str(value)


def differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``"name was → now"`` for each key whose value differs between two identities (the data first)."""
    names = sorted(set(saved) | set(current), key=lambda n: (n != DATA, n))
    return [_shown(n, saved.get(n, _MISSING), current.get(n, _MISSING)) for n in names
            if saved.get(n, _MISSING) != current.get(n, _MISSING)]


def _may_change(name: str, old: Any, new: Any) -> bool:
    """Whether a resumed run may change resumable setting ``name`` from ``old`` to ``new``."""
    if name == "patience":
        return new == old or (old > 0 and new >= old)
    return True


def resume_changes(out: str | os.PathLike, saved: Mapping[str, Any], identity: Mapping[str, Any],
                   resumable: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The allowed changes ``{setting: [was, now]}`` of a resume of ``saved`` (:class:`ResumeError` otherwise)."""
    if not saved:
        raise ResumeError(f"--resume: {Path(out) / CHECKPOINT} records no run identity (written by an earlier "
                          "tff_esn), so the settings that started it cannot be checked; start over with --force or "
                          "in a new output folder.")
    was = saved.get("resumable", {})
    refused = [name for name, new in resumable.items() if name in was and not _may_change(name, was[name], new)]
    shown = differences(saved.get("identity", {}), identity)
    shown += [f"--{n} {was[n]} → {resumable[n]} (may change to: {RESUMABLE[n]})" for n in refused]
    if shown:
        raise ResumeError(f"--resume: {out} holds a run started with other settings: {', '.join(shown)}; resume it "
                          "with the settings that started it, or start over with --force or in a new output folder.")
    return {name: [was[name], new] for name, new in jsonable(dict(resumable)).items()
            if name in was and was[name] != new}


def check_identity(out: str | os.PathLike, identity: Mapping[str, Any], resumable: Mapping[str, Any]) -> None:
    """:func:`resume_changes` against every run record in ``out``: its checkpoint's and its selection candidates'
    (``DIR/selection/*``, compared without their :data:`CANDIDATE` key), so a folder is resumed only by its run."""
    out = Path(out).expanduser()
    for path in (out / CHECKPOINT, *sorted(out.glob(f"selection/*/{CHECKPOINT}"))):
        saved = saved_record(path.parent.parent)
        if saved is None:
            continue
        if path != out / CHECKPOINT and saved:
            saved = {**saved, "identity": {k: v for k, v in saved.get("identity", {}).items() if k != CANDIDATE}}
        resume_changes(out, saved, identity, resumable)


def check_resume(out: str | os.PathLike, config: Any, dataset: SequenceDataset, split: Split) -> None:
    """:func:`check_identity` of ``config`` on the data against the run records in ``out`` (none: nothing to check)."""
    check_identity(out, run_identity(config, dataset, split), resumable_settings(config))
