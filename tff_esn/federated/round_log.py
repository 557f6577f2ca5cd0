"""A federated run's rows: ``DIR/rounds.csv`` (``CSVFileReleaseManager``'s columns, one ``O_APPEND`` write per row;
rewritten atomically only to drop rows past the resumed round or add a column) and ``DIR/tensorboard``."""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common.io import write_text_atomic

KEY = "round"


def _csv_text(fieldnames: Sequence[str], rows: Sequence[Mapping[str, Any]], *, header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fieldnames), lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class RoundLog:
    """The rows of a run in ``out`` whose earlier rounds ``1 … start_round`` are kept (the checkpoint's); not
    ``timed``: every TensorBoard event carries the log's opening time, not the round's wall time."""

    def __init__(self, out: Path, start_round: int, *, timed: bool = True):
        self.path = out / "rounds.csv"
        self.fields: list[str] = []
        if self.path.exists():
            with open(self.path, newline="") as fh:
                reader = csv.DictReader(fh)
                rows = list(reader)
                self.fields = list(reader.fieldnames or [])
            kept = [r for r in rows if int(r[KEY]) <= start_round]
            if len(kept) != len(rows):
                write_text_atomic(self.path, _csv_text(self.fields, kept, header=True))
        self._events = _EventWriter(out / "tensorboard", timed=timed)

    def append(self, row: Mapping[str, Any], round_num: int) -> None:
        """Adds ``row``'s entries (its ``round`` is ``round_num``) to ``rounds.csv`` and TensorBoard."""
        values = {KEY: round_num, **{k: np.array(row[k]).tolist() for k in sorted(row) if k != KEY}}
        new = [k for k in values if k not in self.fields]
        if new or not self.path.exists():
            self._rewrite([*(self.fields or [KEY]), *(k for k in new if k != KEY)])
        line = _csv_text(self.fields, [values], header=False).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            written = os.write(fd, line)
        finally:
            os.close(fd)
        if written != len(line):
            raise OSError(f"{self.path}: wrote {written} of {len(line)} bytes of round {round_num}'s row (disk full?).")
        self._events.scalars({k: v for k, v in values.items() if k != KEY}, round_num)

    def _rewrite(self, fields: list[str]) -> None:
        """The file with columns ``fields`` and its rows so far (a new column: blank in earlier rows)."""
        rows = []
        if self.path.exists():
            with open(self.path, newline="") as fh:
                rows = list(csv.DictReader(fh))
        write_text_atomic(self.path, _csv_text(fields, rows, header=True))
        self.fields = fields

    def close(self) -> None:
        self._events.close()


class _EventWriter:
    """Scalar summaries of numeric values into an event file in ``folder`` (what TensorBoard reads), stamped with
    the wall time of each write (``timed``) or of the writer's opening."""

    def __init__(self, folder: Path, *, timed: bool = True):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        folder.mkdir(parents=True, exist_ok=True)
        self.writer = EventFileWriter(str(folder))
        self.opened = None if timed else time.time()

    def scalars(self, values: Mapping[str, Any], step: int) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.plugins.scalar import metadata
        from tensorboard.util import tensor_util

        with np.errstate(over="ignore"):  # float32, as tf.summary.scalar writes it (beyond its range: ±inf)
            summary = summary_pb2.Summary(value=[
                summary_pb2.Summary.Value(tag=name, tensor=tensor_util.make_tensor_proto(np.float32(value)),
                                          metadata=metadata.create_summary_metadata(display_name=name, description=""))
                for name, value in values.items() if np.asarray(value).dtype.kind in "biuf"])
        wall_time = time.time() if self.opened is None else self.opened
        self.writer.add_event(event_pb2.Event(wall_time=wall_time, step=step, summary=summary))

    def close(self) -> None:
        self.writer.close()
