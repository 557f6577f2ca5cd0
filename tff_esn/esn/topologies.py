"""The graphs a recurrent matrix Ŵ can follow and their metrics (no TensorFlow, no networkx): ring (SCR),
delay-line (DLR), cycle-jumps (CRJ; Rodan & Tiňo 2011, 2012), small-world and scale-free in networkx's draws."""

from __future__ import annotations

import random

import numpy as np

from tff_esn.esn.hyperparameters import TOPOLOGIES

__all__ = ["TOPOLOGIES", "barabasi_albert", "cycle_jumps", "delay_line", "graph_metrics", "ring", "watts_strogatz"]


def ring(units: int) -> np.ndarray:
    """(units, units) 0/1: the simple cycle i → (i + 1) mod N (a self-loop for one unit)."""
    w = np.zeros((units, units))
    w[np.arange(units), (np.arange(units) + 1) % units] = 1.0
    return w


def delay_line(units: int) -> np.ndarray:
    """(units, units) 0/1: the chain i → i + 1, i < N − 1 (nilpotent: every eigenvalue is 0)."""
    return np.eye(units, k=1)


def cycle_jumps(units: int, jump: int, jump_weight: float) -> np.ndarray:
    """The ring plus jumps i ↔ (i + ℓ) mod N of weight ``jump_weight`` (Rodan & Tiňo's cycle reservoir with jumps)."""
    w = ring(units)
    for i in range(0, units, jump):
        j = (i + jump) % units
        if j != i:
            w[i, j] = w[j, i] = jump_weight
    return w


def watts_strogatz(units: int, neighbours: int, rewiring: float, seed: int) -> np.ndarray:
    """Symmetric bool adjacency of the Watts–Strogatz graph, in networkx's order of draws."""
    rng = random.Random(seed)
    adjacent = [set() for _ in range(units)]
    if neighbours >= units:
        return ~np.eye(units, dtype=bool)
    nodes = list(range(units))
    for j in range(1, neighbours // 2 + 1):
        for u in nodes:
            v = (u + j) % units
            adjacent[u].add(v)
            adjacent[v].add(u)
    for j in range(1, neighbours // 2 + 1):
        for u in nodes:
            v = (u + j) % units
            if rng.random() < rewiring:
                w = rng.choice(nodes)
                while w == u or w in adjacent[u]:
                    w = rng.choice(nodes)
                    if len(adjacent[u]) >= units - 1:
                        break
                else:
                    adjacent[u].discard(v)
                    adjacent[v].discard(u)
                    adjacent[u].add(w)
                    adjacent[w].add(u)
    return _adjacency(adjacent)


def barabasi_albert(units: int, attachment: int, seed: int) -> np.ndarray:
    """Symmetric bool adjacency of the Barabási–Albert graph, in networkx's order of draws."""
    rng = random.Random(seed)
    adjacent = [set() for _ in range(units)]
    for spoke in range(1, attachment + 1):
        adjacent[0].add(spoke)
        adjacent[spoke].add(0)
    repeated = [0] * attachment + list(range(1, attachment + 1))
    for source in range(attachment + 1, units):
        targets: set[int] = set()
        while len(targets) < attachment:
            targets.add(rng.choice(repeated))
        for target in targets:
            adjacent[source].add(target)
            adjacent[target].add(source)
        repeated.extend(targets)
        repeated.extend([source] * attachment)
    return _adjacency(adjacent)


def _adjacency(adjacent: list[set[int]]) -> np.ndarray:
    out = np.zeros((len(adjacent), len(adjacent)), dtype=bool)
    for u, vs in enumerate(adjacent):
        out[u, sorted(vs)] = True
    return out


GRAPH_WORK = 5e7
"""The operations :func:`graph_metrics` spends on clustering (Σ degree²) or on the path lengths
(N · (N + edges), breadth-first from every unit) before it skips that metric."""


def graph_metrics(recurrent: np.ndarray, work: float = GRAPH_WORK) -> dict:
    """Ŵ's graph metrics (as networkx); one costing more than ``work`` operations is ``None``, why in ``skipped``."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components, shortest_path

    w = np.asarray(recurrent) != 0
    n = w.shape[0]
    loops = int(np.trace(w))
    np.fill_diagonal(w, False)
    graph = csr_matrix(w | w.T, dtype=np.float64)
    degree = np.diff(graph.indptr)
    skipped, clustering, path_length = {}, None, None
    if float(np.sum(degree.astype(np.float64) ** 2)) <= work:
        closed = np.asarray((graph @ graph).multiply(graph).sum(axis=1)).ravel()
        pairs = degree * (degree - 1.0)
        clustering = float(np.divide(closed, pairs, out=np.zeros(n), where=pairs > 0).mean())
    else:
        skipped["clustering"] = f"Σ degree² = {np.sum(degree.astype(np.float64) ** 2):.3g} operations > {work:.3g}"
    if n * (n + graph.nnz) <= work:
        hops = shortest_path(graph, unweighted=True, directed=False)
        reachable = np.isfinite(hops) & ~np.eye(n, dtype=bool)
        path_length = float(hops[reachable].mean()) if reachable.any() else float("nan")
    else:
        skipped["path_length"] = f"N · (N + edges) = {n * (n + graph.nnz):.3g} operations > {work:.3g}"
    return {
        "units": n,
        "edges": int(w.sum()),
        "self_loops": loops,
        "density": float(w.sum() / (n * (n - 1))) if n > 1 else 0.0,
        "degree_histogram": np.bincount(degree, minlength=1).tolist(),
        "min_degree": int(degree.min()),
        "mean_degree": float(degree.mean()),
        "degree_std": float(degree.std()),
        "max_degree": int(degree.max()),
        "clustering": clustering,
        "path_length": path_length,
        "connected": bool(connected_components(graph, directed=False)[0] == 1),
        "skipped": skipped,
    }
