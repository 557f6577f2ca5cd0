"""Client data of the thesis' federated training: :class:`CachedStates` (harvested once per reservoir and noise)
or :class:`RawInputs` (faithful: noise redrawn per round); every draw a function of (seed, purpose, round, client)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tff_esn.common import streams
from tff_esn.esn.hyperparameters import ReservoirConfig, client_reservoir
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.states_tf import run_reservoir_shapeless
from tff_esn.esn.standardization import Standardization

def client_reservoir_configs(server: ReservoirConfig, n_clients: int, mode: str) -> list[ReservoirConfig]:
    """Each client's reservoir: the server's (``same``, thesis Table 6.4) or its own (``different``, Table 6.5)."""
    return [server] * n_clients if mode == "same" else [client_reservoir(server, i) for i in range(n_clients)]


def targets(client: ClientSequences, config: ThesisModelConfig) -> np.ndarray:
    """float32 targets shaped like the model's output: 0/1 labels (…, 1) for two classes, else one-hot (…, K)."""
    if config.per_step:
        if not client.per_step:
            raise ValueError("state_mode='all' predicts at every step and needs per-step labels (n, T); "
                             f"got per-sequence labels {client.y.shape}: use state_mode 'last' or 'mean'.")
        if config.washout >= client.x.shape[1]:
            raise ValueError(f"washout ({config.washout}) must be shorter than the sequences ({client.x.shape[1]} steps).")
        labels = client.y[:, config.washout:]
    elif client.per_step:
        raise ValueError(f"state_mode={config.state_mode!r} predicts once per sequence and needs per-sequence labels "
                         f"(n,); got per-step labels {client.y.shape}: use state_mode 'all'.")
    else:
        labels = client.y
    if config.n_outputs == 1:
        return labels[..., None].astype(np.float32)
    return np.eye(config.n_outputs, dtype=np.float32)[labels]


def noisy(x: np.ndarray, std: float, seed: int) -> np.ndarray:
    """``x + N(0, std²)`` (thesis §6.1 injected input noise), float32, seeded."""
    if std == 0:
        return x
    return (x + np.random.default_rng(seed).normal(0.0, std, size=x.shape)).astype(np.float32)


def reservoir_states(x: np.ndarray, reservoir: ReservoirConfig, config: ThesisModelConfig, *,
                     lengths: np.ndarray | None = None, chunk: int = 256) -> np.ndarray:
    """Reservoir states of ``x`` (n, T, F) as the model's reservoir layer computes them, float32."""
    layer = Reservoir(reservoir, state_mode=config.state_mode, washout=config.washout)
    layer.build((None, x.shape[1], x.shape[2]))
    if lengths is None:
        return np.concatenate([layer(x[i:i + chunk]).numpy() for i in range(0, len(x), chunk)])
    weights = [tf.convert_to_tensor(w) for w in layer.get_weights()]
    return np.concatenate([run_reservoir_shapeless(x[i:i + chunk], *weights, None, layer.leaky, config.state_mode,
                                                   config.washout, lengths[i:i + chunk], reservoir.layer_sizes,
                                                   reservoir.readout_from, layer.activation).numpy()
                           for i in range(0, len(x), chunk)])


def client_states(client: ClientSequences, reservoir: ReservoirConfig, config: ThesisModelConfig) -> np.ndarray:
    """:func:`reservoir_states` of a client's sequences, each at its own length."""
    return reservoir_states(client.x, reservoir, config, lengths=client.lengths)


def _save_raw(path: Path, states: np.ndarray, labels: np.ndarray) -> None:
    """Writes ``states.f32``, ``labels.f32`` and ``shapes.json`` into ``path`` atomically (a renamed sibling folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        np.ascontiguousarray(states, np.float32).tofile(tmp / "states.f32")
        np.ascontiguousarray(labels, np.float32).tofile(tmp / "labels.f32")
        (tmp / "shapes.json").write_text(json.dumps({"states": list(states.shape), "labels": list(labels.shape)}))
        tmp.rename(path)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk leaves no partial folder
        if not (path / "shapes.json").exists():
            raise


def _load_raw(path: Path) -> tf.data.Dataset:
    """The unbatched ``(states, labels)`` dataset of a :func:`_save_raw` folder, memory-mapped by the worker."""
    shapes = json.loads((path / "shapes.json").read_text())
    for name, shape in shapes.items():
        file = path / f"{name}.f32"
        expected = 4 * int(np.prod(shape))
        if not file.is_file() or file.stat().st_size != expected:
            raise ValueError(f"cached states {path}: {file.name} should hold {expected} bytes of float32 {shape}; "
                             "the cache is damaged — delete that folder and run again (it is harvested anew).")

    def read(_):
        return tuple(tf.raw_ops.ImmutableConst(dtype=tf.float32, shape=shapes[name],
                                               memory_region_name=str(path / f"{name}.f32"))
                     for name in ("states", "labels"))

    return tf.data.Dataset.range(1).map(read).unbatch()


def lean_options() -> tf.data.Options:
    """tf.data options for small per-round client datasets: no graph rewrites, no autotuning."""
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    options.autotune.enabled = False
    return options


def epoch_orders(n: int, epochs: int, seed: int | None) -> np.ndarray:
    """(epochs, n): the order of the ``n`` elements in each local epoch from ``seed`` (``None``: stored order)."""
    if seed is None:
        return np.tile(np.arange(n), (epochs, 1))
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(epochs)])


def seeded_epochs(ds: tf.data.Dataset, n: int, batch_size: int, epochs: int, seed: int) -> tf.data.Dataset:
    """The ``n`` elements of ``ds`` in ``epochs`` passes, batched, each in its own order drawn from ``seed``."""
    orders = tf.constant(epoch_orders(n, epochs, seed), tf.int64)

    def passes(*whole):
        def one(order):
            return tf.data.Dataset.from_tensor_slices(tuple(tf.gather(t, order) for t in whole)).batch(batch_size)
        return tf.data.Dataset.from_tensor_slices(orders).flat_map(one)

    return ds.batch(n).flat_map(passes)


def seeded_fit_data(x, y, *, batch_size: int, epochs: int, seed: int) -> tuple[tf.data.Dataset, int]:
    """``(dataset, steps_per_epoch)`` for ``model.fit``: ``epochs`` passes over ``(x, y)`` in seeded orders."""
    n = len(x)
    if n == 0 or len(y) != n:
        raise ValueError(f"seeded_fit_data: expected as many inputs as labels (≥ 1), got {n} and {len(y)}.")
    ds = seeded_epochs(tf.data.Dataset.from_tensor_slices((x, y)), n, batch_size, epochs, seed)
    return ds, -(-n // batch_size)


def _batched(ds: tf.data.Dataset, n: int, config: ThesisModelConfig, shuffle_seed: int | None) -> tf.data.Dataset:
    """Shuffled (seeded, anew each epoch), batched, repeated for ``config.epochs`` local epochs."""
    if shuffle_seed is not None:
        return seeded_epochs(ds, n, config.batch_size, config.epochs, shuffle_seed).with_options(lean_options())
    ds = ds.batch(config.batch_size)
    return (ds.repeat(config.epochs) if config.epochs > 1 else ds).with_options(lean_options())


class ClientArrays(NamedTuple):
    """One client's round in arrays: inputs, float32 targets, each epoch's order and its own reservoir weights."""

    x: np.ndarray
    y: np.ndarray
    orders: np.ndarray
    reservoir: tuple[np.ndarray, ...] | None


class RoundArrays(NamedTuple):
    """The sampled clients' :class:`ClientArrays` of a round and the batch size."""

    clients: tuple[ClientArrays, ...]
    batch_size: int


class _ClientSource:
    """Common part: client order, noise per client, seeded per-round shuffling."""

    def __init__(self, clients: Mapping[str, ClientSequences], config: ThesisModelConfig, *, seed: int,
                 noise_std: float | Mapping[str, float], shuffle: bool):
        if not clients:
            raise ValueError("clients: no training clients.")
        empty = [cid for cid, c in clients.items() if len(c) == 0]
        if empty:
            raise ValueError(f"clients: {empty} have no sequences; leave them out of the training clients.")
        self.ids = tuple(clients)
        self.clients = dict(clients)
        self.config = config
        self.seed = seed
        self.shuffle = shuffle
        self.noise = self._noise_table(noise_std)
        self.sizes = {cid: len(c) for cid, c in self.clients.items()}

    def _noise_table(self, noise_std: float | Mapping[str, float]) -> dict[str, float]:
        if isinstance(noise_std, Mapping):
            return {cid: float(noise_std.get(cid, 0.0)) for cid in self.ids}
        return {cid: float(noise_std) for cid in self.ids}

    def index(self, cid: str) -> int:
        return self.ids.index(cid)

    def shuffle_seed(self, cid: str, round_num: int) -> int | None:
        return streams.FEDERATED_SHUFFLE.seed(self.seed, round_num, self.index(cid)) if self.shuffle else None

    def datasets(self, client_ids: Sequence[str], round_num: int) -> list[tf.data.Dataset]:
        return [self.dataset(cid, round_num) for cid in client_ids]

    def own_reservoir(self, cid: str) -> tuple[np.ndarray, ...] | None:
        """The client's own reservoir weights, ``None`` when clients use the broadcast server reservoir."""
        return None

    def in_memory(self, client_ids: Sequence[str], round_num: int) -> RoundArrays:
        """The arrays of :meth:`datasets` for the simulation: inputs, targets and each epoch's order."""
        return RoundArrays(tuple(
            ClientArrays(*self.arrays(cid, round_num),
                         epoch_orders(self.sizes[cid], self.config.epochs, self.shuffle_seed(cid, round_num)),
                         self.own_reservoir(cid))
            for cid in client_ids), self.config.batch_size)


def reservoir_weights(reservoir: ReservoirConfig, n_inputs: int, config: ThesisModelConfig) -> tuple[np.ndarray, ...]:
    """The non-trainable weights of the thesis model built with ``reservoir``, in the model's order."""
    model = build_thesis_model(n_inputs, config, reservoir=reservoir)
    return tuple(v.numpy() for v in model.non_trainable_variables)


class RawInputs(_ClientSource):
    """Faithful mode: raw inputs, noise redrawn every round, the reservoir inside the model (Table 6.5: own ones)."""

    def __init__(self, clients: Mapping[str, ClientSequences], config: ThesisModelConfig, *, seed: int = 0,
                 noise_std: float | Mapping[str, float] = 0.0, reservoirs: str = "same", shuffle: bool = True):
        super().__init__(clients, config, seed=seed, noise_std=noise_std, shuffle=shuffle)
        self.own_reservoirs = reservoirs == "different"
        self._targets = {cid: targets(c, config) for cid, c in self.clients.items()}
        self._clean = {cid: tf.data.Dataset.from_tensor_slices((self.clients[cid].x, self._targets[cid]))
                       for cid in self.ids if self.noise[cid] == 0}
        self._reservoir_weights: dict[str, tuple[np.ndarray, ...]] = {}
        if self.own_reservoirs:
            n_inputs = next(iter(self.clients.values())).x.shape[-1]
            for cid, res in zip(self.ids, client_reservoir_configs(config.reservoir, len(self.ids), reservoirs)):
                self._reservoir_weights[cid] = reservoir_weights(res, n_inputs, config)
        self._reservoirs = {cid: tf.data.Dataset.from_tensors(w) for cid, w in self._reservoir_weights.items()}

    def dataset(self, cid: str, round_num: int) -> tf.data.Dataset | tuple[tf.data.Dataset, tf.data.Dataset]:
        ds = self._clean.get(cid)
        if ds is None:
            ds = tf.data.Dataset.from_tensor_slices(self.arrays(cid, round_num))
        return self._with_reservoir(cid, _batched(ds, self.sizes[cid], self.config, self.shuffle_seed(cid, round_num)))

    def arrays(self, cid: str, round_num: int) -> tuple[np.ndarray, np.ndarray]:
        """The client's inputs with this round's noise, and its targets."""
        seed = streams.FEDERATED_NOISE.seed(self.seed, round_num, self.index(cid))
        x = noisy(self.clients[cid].x, self.noise[cid], seed)
        return x, self._targets[cid]

    def _with_reservoir(self, cid: str, batches: tf.data.Dataset):
        return (batches, self._reservoirs[cid]) if self.own_reservoirs else batches

    def own_reservoir(self, cid: str) -> tuple[np.ndarray, ...] | None:
        return self._reservoir_weights.get(cid)


class CachedStates(_ClientSource):
    """Readout-only mode: every client's states harvested once (optionally standardised and cached), noise fixed."""

    def __init__(self, clients: Mapping[str, ClientSequences], config: ThesisModelConfig, *, seed: int = 0,
                 noise_std: float | Mapping[str, float] = 0.0, reservoirs: str = "same", shuffle: bool = True,
                 cache_dir: str | os.PathLike | None = None,
                 standardize: Callable[[Sequence[np.ndarray]], Standardization] | None = None):
        super().__init__(clients, config, seed=seed, noise_std=noise_std, shuffle=shuffle)
        self.reservoirs = dict(zip(self.ids, client_reservoir_configs(config.reservoir, len(self.ids), reservoirs)))
        self.cache_dir = None if cache_dir is None else Path(cache_dir).absolute()
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._paths: dict[str, Path] = {}
        self.standardization: Standardization | None = None
        raw: dict[str, np.ndarray] = {}
        if config.standardized:
            raw = {cid: self._states(cid) for cid in self.ids}
            self.standardization = standardize([raw[cid] for cid in self.ids])
        self._base = {cid: self._prepare(cid, raw.get(cid)) for cid in self.ids}

    def _key(self, cid: str) -> str:
        client = self.clients[cid]
        digest = hashlib.sha256()
        digest.update(np.ascontiguousarray(client.x).tobytes())
        digest.update(np.ascontiguousarray(client.y).tobytes())
        digest.update(json.dumps({
            "reservoir": self.reservoirs[cid].to_dict(), "state_mode": self.config.state_mode,
            "washout": self.config.washout, "noise": self.noise[cid],
            "noise_seed": streams.CACHED_NOISE.seed(self.seed, self.index(cid)) if self.noise[cid] else None,
            "shape": list(client.x.shape), "format": "raw-float32", "outputs": self.config.n_outputs,
            "lengths": None if client.lengths is None else client.lengths.tolist(),
        }, sort_keys=True).encode())
        if self.standardization is not None:
            digest.update(self.standardization.mean.tobytes())
            digest.update(self.standardization.scale.tobytes())
        return digest.hexdigest()[:24]

    def _states(self, cid: str) -> np.ndarray:
        x = noisy(self.clients[cid].x, self.noise[cid], streams.CACHED_NOISE.seed(self.seed, self.index(cid)))
        return reservoir_states(x, self.reservoirs[cid], self.config, lengths=self.clients[cid].lengths)

    def _prepare(self, cid: str, raw: np.ndarray | None) -> tf.data.Dataset:
        """The client's unbatched ``(states, labels)`` dataset, harvested or cached, standardised if asked."""
        labels = targets(self.clients[cid], self.config)

        def inputs() -> np.ndarray:
            states = self._states(cid) if raw is None else raw
            return states if self.standardization is None else self.standardization.apply(states)

        if self.cache_dir is None:
            self._arrays[cid] = (inputs(), labels)
            return tf.data.Dataset.from_tensor_slices(self._arrays[cid])
        path = self._paths[cid] = self.cache_dir / f"states-{self._key(cid)}"
        if not (path / "shapes.json").exists():
            _save_raw(path, inputs(), labels)
        return _load_raw(path)

    def dataset(self, cid: str, round_num: int) -> tf.data.Dataset:
        return _batched(self._base[cid], self.sizes[cid], self.config, self.shuffle_seed(cid, round_num))

    def arrays(self, cid: str, round_num: int) -> tuple[np.ndarray, np.ndarray]:
        """The client's states and targets (the same every round), read from the cache once."""
        if cid not in self._arrays:
            path = self._paths[cid]
            shapes = json.loads((path / "shapes.json").read_text())
            self._arrays[cid] = tuple(np.fromfile(path / f"{name}.f32", np.float32).reshape(shapes[name])
                                      for name in ("states", "labels"))
        return self._arrays[cid]
