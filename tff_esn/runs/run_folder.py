"""A run folder (``--out``) checked before any work: no run is silently overwritten or mixed.

:func:`check_run_folder` refuses a file, a folder that cannot be created, a finished run (unless ``force`` or
``resume``), unfinished checkpoints without either, and a resume with fewer rounds; :func:`clear_run` clears for
``force``; :func:`run_lock` holds ``flock`` on ``DIR/.lock`` for the run's lifetime.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

CHECKPOINT = Path("checkpoints") / "state.npz"
"""A federated run's round checkpoint, relative to its folder (:mod:`tff_esn.federated.checkpoints`)."""
_LEGACY = re.compile(r"program_state_(\d+)")
RUN_OUTPUTS = ("metrics.json", "rounds.csv", "best_round.npz", "checkpoints", "tensorboard", "selection")
"""What a run writes into its folder (and a forced rerun removes first)."""


LOCK = ".lock"
"""The file in a run folder whose ``flock`` a run holds (it holds the holder's pid as text)."""
_held: set[Path] = set()


class RunFolderError(ValueError):
    """An ``--out`` folder a run must not write into as asked (one line naming the fix)."""


@contextlib.contextmanager
def run_lock(out: str | os.PathLike) -> Iterator[None]:
    """Holds run folder ``out`` for the block: a non-blocking ``flock`` on ``out/.lock`` (holder's pid inside),
    re-entrant in a process; a folder created here and left empty is removed; one that cannot be written or
    created is a :class:`RunFolderError` (:func:`check_writable`)."""
    out = Path(out).expanduser()
    check_writable(out)
    created = not os.path.exists(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        key = out.resolve()
    except OSError as err:
        raise RunFolderError(f"--out {out}: {_uncreatable(err)}; give a folder that can be created and written.") \
            from None
    if key in _held:
        yield
        return
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunFolderError(f"--out {out}: another run (pid {holder}) is writing into it; wait for it to end or "
                             "choose another folder.") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held.add(key)
    try:
        yield
    finally:
        _held.discard(key)
        if created and [p.name for p in out.iterdir()] == [LOCK]:  # a refused run leaves no folder behind
            with contextlib.suppress(OSError):
                (out / LOCK).unlink()
                out.rmdir()
        os.close(fd)  # releases the lock


def rounds_done(out: str | os.PathLike) -> int | None:
    """The last round checkpointed in ``out`` (``None``: no checkpoint), read without loading the state."""
    path = Path(out) / CHECKPOINT
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as saved:
        return int(saved["round"])


def legacy_round(out: str | os.PathLike) -> int | None:
    """The last round of the SavedModel checkpoints (``checkpoints/program_state_N``) in ``out``, if any."""
    rounds = [int(m.group(1)) for p in (Path(out) / CHECKPOINT.parent).glob("program_state_*")
              if (m := _LEGACY.fullmatch(p.name))]
    return max(rounds) if rounds else None


def legacy_message(out: str | os.PathLike, done: int) -> str:
    """Why a folder with SavedModel checkpoints is not continued, and what to do instead."""
    return (f"{out}: its checkpoints (round {done}) are TFF SavedModel folders checkpoints/program_state_N, which "
            f"this version does not read (it checkpoints to {CHECKPOINT}); finish that run with the tff_esn "
            "version that started it, or start it over with --force (force=True) or in a new output folder.")


def _uncreatable(err: OSError) -> str:
    return f"cannot create it ({err.strerror or err})"


def _folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot be written into or created (``None``: it can): a file, an unwritable ancestor, or a
    missing folder whose creation fails (tried, then removed again)."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        return "is a file, not a folder"
    ancestor = next(p for p in (folder, *folder.parents) if os.path.exists(p))
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot create or write it ({ancestor} is {'a file' if not ancestor.is_dir() else 'not writable'})"
    if os.path.exists(folder):
        return None
    missing = [p for p in (folder, *folder.parents) if not os.path.exists(p)]
    try:
        folder.mkdir(parents=True)
    except OSError as err:
        return _uncreatable(err)
    finally:
        for path in missing:
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def check_writable(out: Path) -> None:
    """A :class:`RunFolderError` when ``out`` is a file, or a folder that cannot be written or created."""
    problem = _folder_problem(out)
    if problem is not None:
        raise RunFolderError(f"--out {out}: {problem}; give a folder that can be created and written.")


def check_writable_file(*paths: str | os.PathLike, flag: str = "--out") -> None:
    """A :class:`RunFolderError` when a file of ``paths`` is a folder, or its folder cannot be written or created
    (checked before the work whose result it receives)."""
    for path in map(Path, paths):
        path = path.expanduser()
        problem = "is a folder, not a file" if path.is_dir() else None
        folder_problem = problem or _folder_problem(path.parent)
        if folder_problem is not None:
            where = "" if problem else f" its folder {path.parent}:"
            raise RunFolderError(f"{flag} {path}:{where} {folder_problem}; give a file in a folder that can be "
                                 "created and written.")


def check_run_folder(out: str | os.PathLike, *, force: bool = False, resume: bool = False,
                     rounds: int | None = None, resumable: bool = False) -> Path:
    """``out`` (``~`` expanded) after the module docstring's checks: ``force`` overwrites, ``resume`` continues."""
    out = Path(out).expanduser()
    check_writable(out)
    if force and resume:
        raise RunFolderError("--force starts the run in --out over, --resume continues it; give one of them.")
    legacy = None if force else legacy_round(out)
    if legacy is not None:
        raise RunFolderError(f"--out {legacy_message(out, legacy)}")
    done = rounds_done(out)
    if resume:
        if done is not None and rounds is not None and rounds < done:
            raise RunFolderError(f"--resume --rounds {rounds}: {out} already holds {done} rounds; give --rounds ≥ "
                                 f"{done}, or --force to start over.")
        return out
    if force:
        return out
    cont = "--resume to continue it, " if resumable else ""
    if (out / "metrics.json").exists():
        raise RunFolderError(f"--out {out}: holds a finished run (metrics.json); pass --force to overwrite it, "
                             f"{cont}or choose a new folder.")
    if done is not None:
        raise RunFolderError(f"--out {out}: holds checkpoints of an earlier run (round {done}); pass {cont}"
                             "--force to start over, or choose a new folder.")
    return out


def clear_run(out: str | os.PathLike) -> None:
    """Removes the :data:`RUN_OUTPUTS` of an earlier run from ``out`` (other files stay)."""
    for name in RUN_OUTPUTS:
        path = Path(out).expanduser() / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
