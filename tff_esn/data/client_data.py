"""Per-subject client datasets: TFF's ``ClientData`` view of a :class:`SequenceDataset`.

:func:`to_client_data` gives ``OrderedDict(x=(T, F) float32, y=() or (T,) int64)`` per sequence; the
sequences are sliced through a ``tf.lookup.StaticHashTable``, so a client id may arrive as a tensor.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import numpy as np

from tff_esn.data.sequences import SequenceDataset
from tff_esn.runtime import load_tff


def to_client_data(dataset: SequenceDataset, client_ids: Iterable[str] | None = None):
    """``tff.simulation.datasets.ClientData`` of ``client_ids`` (default: all clients).

    Raises:
        ValueError: the chosen clients' sequences differ in length (T) or label shape.
        KeyError: an unknown client id.
    """
    import tensorflow as tf
    tff = load_tff()

    ids = list(dataset.client_ids if client_ids is None else client_ids)
    clients = dataset.select(ids)
    shapes = {cid: (c.x.shape[1:], c.y.shape[1:]) for cid, c in clients.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"to_client_data: clients must share sequence and label shapes, got {shapes}.")
    x_all = np.concatenate([c.x for c in clients.values()])
    y_all = np.concatenate([c.y for c in clients.values()])
    counts = np.array([len(c) for c in clients.values()], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)

    def dataset_fn(client_id):
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(ids), tf.range(len(ids), dtype=tf.int64)), default_value=-1)
        index = table.lookup(tf.convert_to_tensor(client_id, tf.string))
        tf.debugging.assert_non_negative(index, message="to_client_data: unknown client id")
        start = tf.gather(tf.constant(starts), index)
        size = tf.gather(tf.constant(counts), index)
        x = tf.slice(tf.constant(x_all), tf.concat([[start], tf.zeros(x_all.ndim - 1, tf.int64)], 0),
                     tf.concat([[size], tf.constant(x_all.shape[1:], tf.int64)], 0))
        y = tf.slice(tf.constant(y_all), tf.concat([[start], tf.zeros(y_all.ndim - 1, tf.int64)], 0),
                     tf.concat([[size], tf.constant(y_all.shape[1:], tf.int64)], 0))
        return tf.data.Dataset.from_tensor_slices(collections.OrderedDict(x=x, y=y))

    return tff.simulation.datasets.ClientData.from_clients_and_tf_fn(ids, dataset_fn)
