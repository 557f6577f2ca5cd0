"""Reservoir topologies and per-unit leaking rates against independent references: networkx's
generators with the same seed, direct constructions, numpy's eigenvalues and a plain loop of
the state equation."""

import json

import networkx as nx
import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.esn import topologies
from tff_esn.esn.draws import graph_seed, leak_rates, recurrent_weights
from tff_esn.esn.hyperparameters import TOPOLOGIES, ReservoirConfig
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights

from closed_form_data import write_npz, random_dataset


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("units,k,p", [(30, 4, 0.1), (50, 6, 0.5), (12, 2, 1.0), (40, 8, 0.0)])
def test_small_world_is_networkx_watts_strogatz_with_the_same_seed(seed, units, k, p):
    config = ReservoirConfig(units=units, topology="small-world", neighbours=k, rewiring=p, seed=seed)
    reference = nx.to_numpy_array(nx.watts_strogatz_graph(units, k, p, seed=graph_seed(config))) != 0
    np.testing.assert_array_equal(topologies.watts_strogatz(units, k, p, graph_seed(config)), reference)
    np.testing.assert_array_equal(recurrent_weights(config) != 0, reference)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("units,m", [(30, 1), (50, 3), (20, 5)])
def test_scale_free_is_networkx_barabasi_albert_with_the_same_seed(seed, units, m):
    config = ReservoirConfig(units=units, topology="scale-free", attachment=m, seed=seed)
    reference = nx.to_numpy_array(nx.barabasi_albert_graph(units, m, seed=graph_seed(config))) != 0
    np.testing.assert_array_equal(recurrent_weights(config) != 0, reference)


@pytest.mark.parametrize("units", [1, 2, 7, 40])
def test_ring_and_delay_line_are_the_cycle_and_the_chain(units):
    radius = 0.7
    ring = recurrent_weights(ReservoirConfig(units=units, topology="ring", spectral_radius=radius))
    line = recurrent_weights(ReservoirConfig(units=units, topology="delay-line", spectral_radius=radius))
    cycle = np.zeros((units, units))
    for i in range(units):
        cycle[i, (i + 1) % units] = radius  # unit i feeds unit i + 1 (row-vector layout)
    np.testing.assert_allclose(ring, cycle, rtol=1e-7)
    np.testing.assert_allclose(line, np.triu(cycle, 1), rtol=1e-7)
    directed = nx.DiGraph(ring != 0)
    assert units == 1 or (nx.is_strongly_connected(directed) and len(nx.find_cycle(directed)) == units)
    assert not np.any(np.linalg.matrix_power(line.astype(np.float64), units))  # nilpotent: ρ = 0


@pytest.mark.parametrize("units,jump", [(12, 3), (13, 4), (20, 2)])
def test_cycle_jumps_are_the_ring_plus_bidirectional_jumps(units, jump):
    w = recurrent_weights(ReservoirConfig(units=units, topology="cycle-jumps", jump=jump, jump_weight=0.5))
    r_c = w[0, 1]
    expected = np.zeros((units, units))
    for i in range(units):
        expected[i, (i + 1) % units] = r_c
    for i in range(0, units, jump):
        expected[i, (i + jump) % units] = expected[(i + jump) % units, i] = 0.5 * r_c
    np.testing.assert_allclose(w, expected, rtol=1e-6)


@pytest.mark.parametrize("topology", [t for t in TOPOLOGIES if t != "delay-line"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("radius", [0.5, 0.95, 1.3])
def test_spectral_radius_is_the_requested_one(topology, seed, radius):
    config = ReservoirConfig(units=60, topology=topology, spectral_radius=radius, seed=seed,
                             recurrent_connectivity=0.1)
    w = recurrent_weights(config).astype(np.float64)
    assert np.max(np.abs(np.linalg.eigvals(w))) == pytest.approx(radius, abs=1e-6)


def test_topologies_are_seeded_and_the_default_is_the_random_reservoir():
    for topology in TOPOLOGIES:
        config = ReservoirConfig(units=30, topology=topology, seed=4)
        np.testing.assert_array_equal(recurrent_weights(config), recurrent_weights(config))
    random = ReservoirConfig(units=30, seed=4)
    # the random topology's Ŵ: every unit receives from round(connectivity · N) units, ρ rescaled
    w = recurrent_weights(random.replace(recurrent_connectivity=0.2))
    assert set(np.count_nonzero(w, axis=0)) == {6}
    assert random.topology == "random" and leak_rates(random) == random.leaky


@pytest.mark.parametrize("topology,seed", [("small-world", 1), ("scale-free", 2), ("ring", 0), ("random", 3)])
def test_graph_metrics_equal_networkx(topology, seed):
    w = recurrent_weights(ReservoirConfig(units=40, topology=topology, seed=seed, recurrent_connectivity=0.1))
    metrics = topologies.graph_metrics(w)
    graph = nx.Graph(nx.from_numpy_array((w != 0).astype(int), create_using=nx.DiGraph).to_undirected())
    graph.remove_edges_from(nx.selfloop_edges(graph))
    assert metrics["clustering"] == pytest.approx(nx.average_clustering(graph), abs=1e-12)
    assert metrics["connected"] == nx.is_connected(graph)
    if metrics["connected"]:
        assert metrics["path_length"] == pytest.approx(nx.average_shortest_path_length(graph), abs=1e-12)
    assert metrics["degree_histogram"] == nx.degree_histogram(graph)
    assert metrics["edges"] == int(np.count_nonzero(w) - np.count_nonzero(np.diag(w)))


def test_graph_metrics_beyond_the_work_budget_are_skipped_with_the_reason():
    w = recurrent_weights(ReservoirConfig(units=30, seed=1))
    metrics = topologies.graph_metrics(w, work=1000)
    assert metrics["clustering"] is None and metrics["path_length"] is None
    assert set(metrics["skipped"]) == {"clustering", "path_length"} and "> 1e+03" in metrics["skipped"]["clustering"]
    assert metrics["mean_degree"] == 29 and metrics["connected"]
    assert topologies.graph_metrics(w, work=30 * 31 * 30)["clustering"] == 1.0


def test_graph_metrics_of_a_disconnected_graph():
    w = np.zeros((4, 4))
    w[0, 1] = w[2, 3] = 1.0
    metrics = topologies.graph_metrics(w)
    assert not metrics["connected"] and metrics["path_length"] == 1.0 and metrics["clustering"] == 0.0
    assert metrics["degree_histogram"] == [0, 4] and metrics["density"] == pytest.approx(2 / 12)


@pytest.mark.parametrize("field,value,match", [
    ("topology", "lattice", "topology"), ("neighbours", 3, "even"), ("rewiring", 1.5, "probability"),
    ("attachment", 30, "attachment"), ("jump", 1, "jump"), ("leak_low", 0.9, "leak_low"),
    ("leak_distribution", "normal", "leak_distribution"),
])
def test_bad_topology_and_leak_settings_are_rejected_by_name(field, value, match):
    base = {"topology": {"neighbours": "small-world", "attachment": "scale-free"}.get(field, "random")}
    with pytest.raises(ValueError, match=match):
        ReservoirConfig(units=30, leaky=0.5, **{**base, field: value})


@pytest.mark.parametrize("distribution", ["uniform", "log-uniform", "layered"])
def test_leak_rates_follow_their_distribution(distribution):
    config = ReservoirConfig(units=400, leaky=0.8, leak_low=0.2, leak_distribution=distribution, leak_layers=4, seed=2)
    rates = np.array(leak_rates(config))
    assert rates.shape == (400,) and np.all((rates >= np.float32(0.2)) & (rates <= np.float32(0.8)))
    if distribution == "layered":
        np.testing.assert_allclose(rates, np.repeat(np.linspace(0.8, 0.2, 4), 100), rtol=1e-6)
    elif distribution == "uniform":
        assert abs(rates.mean() - 0.5) < 0.03
    else:
        assert abs(np.log(rates).mean() - (np.log(0.2) + np.log(0.8)) / 2) < 0.05
    assert leak_rates(config) == leak_rates(config)


def _loop(x, w: ReservoirWeights):
    """The state equation as a plain float64 loop, one sequence at a time."""
    a = np.asarray(w.leaky, np.float64)
    out = np.zeros((x.shape[0], x.shape[1], w.units))
    for i, seq in enumerate(x.astype(np.float64)):
        state = np.zeros(w.units)
        for t, u in enumerate(seq):
            state = (1 - a) * state + a * np.tanh(w.gain * (u @ w.kernel + state @ w.recurrent) + w.bias)
            out[i, t] = state
    return out


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_per_unit_leak_states_equal_a_plain_loop_in_both_backends(topology):
    from tff_esn.esn.states_tf import run_reservoir

    config = ReservoirConfig(units=24, topology=topology, leaky=0.9, leak_distribution="uniform", leak_low=0.1,
                             seed=1, bias_scaling=0.2, neighbours=4, attachment=2)
    w = ReservoirWeights.from_config(config, 3)
    assert isinstance(w.leaky, tuple) and len(set(w.leaky)) > 1
    x = np.random.default_rng(0).normal(size=(3, 15, 3)).astype(np.float32)
    states = states_and_statistics(x, *w.layer_weights(), w.leaky, keep="all")[0]
    np.testing.assert_allclose(states, _loop(x, w), atol=2e-5)
    tf_states = run_reservoir(x, w.kernel, w.recurrent, w.bias, None, w.leaky, "all").numpy()
    np.testing.assert_allclose(tf_states, states, atol=2e-6)


def test_keras_layer_round_trips_topology_and_per_unit_leak():
    from tff_esn.esn.layer import Reservoir

    layer = Reservoir(units=16, topology="small-world", neighbours=4, leak_distribution="layered", leaky=0.9,
                      leak_low=0.3, seed=7, state_mode="all")
    x = np.random.default_rng(1).normal(size=(2, 9, 3)).astype(np.float32)
    out = layer(x).numpy()
    clone = Reservoir.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(x).numpy(), out)
    w = ReservoirWeights.from_layer(layer)
    assert w.key == ReservoirWeights.from_config(layer.reservoir_config, 3).key
    np.testing.assert_allclose(out, _loop(x, w), atol=2e-5)


def test_per_unit_leak_array_is_validated():
    w = ReservoirWeights.from_config(ReservoirConfig(units=4), 2)
    assert w.replace(leaky=np.array([0.5, 1, 0.2, 0.1])).leaky == (0.5, 1.0, 0.2, 0.1)
    with pytest.raises(ValueError, match=r"one leaking rate in \(0, 1\] per unit \(4\)"):  # the boundary: the config
        ReservoirConfig(units=4, leak_values=(0.5, 0.5))
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        ReservoirConfig(units=4, leak_values=(0.5, 0.5, 0.0, 1.0))


def test_explicit_leak_values_from_the_command_line(tmp_path, capsys):
    rates = np.linspace(0.15, 1.0, 12)
    np.save(tmp_path / "leak.npy", rates)
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])
    flags = ["--units", "12", "--l2", "1e-2", "--washout", "1", "--topology", "ring"]
    records = {}
    for name, values in [("centralized", str(tmp_path / "leak.npy")), ("incfed", ",".join(map(str, rates)))]:
        assert main(["run", name, "--data", f"npz:{path}", "--out", str(tmp_path / name), *flags,
                     "--leak-values", values]) == 0
        records[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    config = ReservoirConfig(units=12, topology="ring", leak_values=tuple(records["incfed"]["config"]["leak_values"]["value"]))
    w = ReservoirWeights.from_config(config, 3)
    np.testing.assert_array_equal(w.leaky, rates.astype(np.float32))
    x = np.random.default_rng(4).normal(size=(2, 8, 3)).astype(np.float32)
    expected = np.zeros((2, 8, 12))
    for i, seq in enumerate(x.astype(np.float64)):  # the equation with the file's rates, float64
        state = np.zeros(12)
        for t, u in enumerate(seq):
            state = (1 - rates) * state + rates * np.tanh(u @ w.kernel + state @ w.recurrent)
            expected[i, t] = state
    np.testing.assert_allclose(states_and_statistics(x, *w.layer_weights(), w.leaky, keep="all")[0], expected,
                               atol=2e-5)
    for group in ("train", "val", "test"):
        assert records["centralized"][group] == records["incfed"][group]
    deep = ReservoirConfig(units=6, layers=2, layer_units=(6, 4), leak_values=tuple(np.linspace(0.1, 1, 10)))
    assert deep.layer(1).leak_values == deep.leak_values[6:]
    np.testing.assert_array_equal(ReservoirWeights.from_config(deep, 2).leaky, np.linspace(0.1, 1, 10, dtype=np.float32))
    np.save(tmp_path / "square.npy", np.ones((3, 4)))
    for values, match in [("0.5,0.5", "one leaking rate in"), (",".join(["1.5"] * 12), "one leaking rate in"),
                          (str(tmp_path / "square.npy"), "1-D array"), (str(tmp_path / "none.npy"), "cannot read")]:
        try:
            code = main(["run", "incfed", "--data", f"npz:{path}", "--out", str(tmp_path / "bad"), *flags,
                         "--leak-values", values, "--force"])
        except SystemExit as exit_:
            code = exit_.code
        assert code == 2 and match in capsys.readouterr().err
    with pytest.raises(ValueError, match="constant leak_distribution"):
        ReservoirConfig(units=2, leak_values=(0.5, 0.5), leak_distribution="uniform")


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_incfed_gives_centralized_predictions_for_every_topology(topology, tmp_path):
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])
    flags = ["--units", "12", "--l2", "1e-2", "--washout", "1", "--topology", topology, "--neighbours", "4",
             "--attachment", "2", "--leak-distribution", "uniform", "--leaky", "0.8"]
    records = {}
    for name in ("centralized", "incfed"):
        assert main(["run", name, "--data", f"npz:{path}", "--out", str(tmp_path / name), *flags]) == 0
        records[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    assert records["incfed"]["config"]["topology"]["value"] == topology
    w = recurrent_weights(ReservoirConfig(units=12, topology=topology, neighbours=4, attachment=2))
    graph = nx.Graph(nx.from_numpy_array((w != 0).astype(int), create_using=nx.DiGraph).to_undirected())
    graph.remove_edges_from(nx.selfloop_edges(graph))
    recorded = records["incfed"]["reservoir_graph"]
    degrees = np.array([d for _, d in graph.degree()])
    assert recorded["clustering"] == pytest.approx(nx.average_clustering(graph), abs=1e-12)
    assert (recorded["min_degree"], recorded["max_degree"]) == (degrees.min(), degrees.max())
    assert recorded["degree_std"] == pytest.approx(degrees.std(), abs=1e-12) and recorded["skipped"] == {}
    if nx.is_connected(graph):
        assert recorded["path_length"] == pytest.approx(nx.average_shortest_path_length(graph), abs=1e-12)
    for group in ("train", "val", "test"):
        assert records["centralized"][group] == records["incfed"][group]
