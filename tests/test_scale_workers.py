"""Scale-out on TFF's distributed runtime: two loopback workers give the single-process results.

The workers are started by this module (``LocalWorker``: loopback addresses, owned by the
test process) and stopped at its end; the context is switched back to the local worker so
the rest of the session is unaffected. Sums over clients are computed in another order
across two workers (two partial sums, then their merge), so results agree to the last
bits of float64 (IncFed) or float32 (FedAvg), not bit for bit; predictions and metrics
are identical.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tff_esn import ReservoirConfig, runtime
from tff_esn.data.sequences import Split
from tff_esn.runs.run_folder import rounds_done
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import fit_incfed, federate_tff

from closed_form_data import THESIS_SPLIT, fake_data_modules, random_dataset, random_thesis_dataset

TIMEOUT = 4.0


@pytest.fixture(scope="module")
def workers():
    started = [runtime.LocalWorker().start() for _ in range(2)]
    for w in started:
        runtime.connect(w.address, worker=w)
    yield started
    for w in started:
        w.stop()
    runtime.ensure_context(force=True)


def _local():
    runtime.ensure_context(force=True)


def _on(workers):
    runtime.ensure_context([w.address for w in workers], timeout=TIMEOUT)


def _thesis_data():
    return random_thesis_dataset(), THESIS_SPLIT


def _fedavg_config(rounds):
    from tff_esn.federated import FedAvgConfig, ThesisModelConfig

    model = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                              learning_rate=0.05)
    return FedAvgConfig(model=model, rounds=rounds, clients_per_round=4, noise_std=0.5, progress=False)


def test_incfed_on_two_workers_equals_single_process_and_numpy(workers):
    data = random_dataset(n_clients=7, seed=2)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=1), 3)
    spec = StateSpec()
    clients = list(data.clients.values())
    _local()
    single = federate_tff(weights, clients, data.n_classes, spec, 1e-3).readout
    _on(workers)
    assert runtime.current_workers() == [w.address for w in workers]
    two = federate_tff(weights, clients, data.n_classes, spec, 1e-3).readout
    harvester = Harvester(data, spec)
    reference = fit_incfed([harvester.stats(weights, c) for c in data.client_ids], 1e-3)
    np.testing.assert_allclose(two, single, rtol=0, atol=1e-12)
    np.testing.assert_allclose(two, reference, rtol=1e-5, atol=1e-6)
    scores = [harvester.scores(w, weights, data.client_ids)[0].argmax(1) for w in (single, two)]
    np.testing.assert_array_equal(*scores)
    # every client counted once: a half of the clients gives another readout (TFF 0.87's split bug)
    half = fit_incfed([harvester.stats(weights, c) for c in data.client_ids[:4]], 1e-3)
    assert np.abs(two - half).max() > 1e-3


def test_clients_argument_in_the_middle_is_split_over_all_workers(workers):
    import tensorflow_federated as tff

    _on(workers)

    @tff.federated_computation(tff.FederatedType(np.float64, tff.SERVER), tff.FederatedType(np.float64, tff.CLIENTS),
                               tff.FederatedType(np.float64, tff.SERVER))
    def total(a, values, b):
        return tff.federated_sum(values)

    assert total(1.0, [1.0, 2.0, 3.0, 4.0, 5.0], 2.0) == 15.0


def test_fedavg_rounds_on_two_workers_equal_single_process(workers):
    from tff_esn.federated import run_federated

    data, split = _thesis_data()
    config = _fedavg_config(rounds=2)
    _local()
    single = run_federated(data, split, config)
    _on(workers)
    two = run_federated(data, split, config)
    for key in ("kernel", "bias"):
        np.testing.assert_allclose(two["extra"]["weights"][key], single["extra"]["weights"][key], rtol=1e-5, atol=1e-7)
    assert two["test"]["accuracy"] == single["test"]["accuracy"]
    assert [r["val_accuracy"] for r in two["extra"]["rounds"]] == [r["val_accuracy"] for r in single["extra"]["rounds"]]


def test_killed_worker_stops_the_run_with_a_clear_error_and_resume_continues(workers, tmp_path):
    from tff_esn.federated import run_federated

    data, split = _thesis_data()
    config = _fedavg_config(rounds=8)
    _on(workers)
    victim = workers[1]
    checkpoints = tmp_path / "checkpoints"

    def kill_after_first_round():
        while not (checkpoints / "state.npz").exists():
            time.sleep(0.05)
        victim.process.kill()

    threading.Thread(target=kill_after_first_round, daemon=True).start()
    began = time.monotonic()
    with pytest.raises(runtime.WorkerError, match=f"{victim.address} died or became unreachable during the run"):
        run_federated(data, split, dataclasses.replace(config, out=str(tmp_path)))
    assert time.monotonic() - began < 120, "the dead worker was waited for far beyond the timeout"
    done = rounds_done(tmp_path)
    assert 1 <= done < config.rounds

    victim.process.wait()
    victim.start()  # back on the same port
    runtime.connect(victim.address, worker=victim)
    resumed = run_federated(data, split, dataclasses.replace(config, out=str(tmp_path), resume=True))
    assert [r["round"] for r in resumed["extra"]["rounds"]] == list(range(1, config.rounds + 1))  # history kept


def test_run_command_with_workers_writes_the_same_metrics(workers, tmp_path, monkeypatch):
    from tff_esn.cli import main

    data = random_dataset(n_clients=5, seed=3)
    ids = data.client_ids
    fake_data_modules(monkeypatch, lambda *a, **k: data, lambda name, d, **k: Split(name, ids[:3], (ids[3],), (ids[4],)))
    common = ["run", "incfed", "--units", "8", "--l2", "1e-2", "--backend", "tff"]
    addresses = ",".join(w.address for w in workers)
    assert main([*common, "--out", str(tmp_path / "two"), "--workers", addresses, "--worker-timeout", "5"]) == 0
    assert runtime.current_workers() == addresses.split(",")
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    assert runtime.current_workers() is None
    one, two = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("one", "two"))
    assert one["test"] == two["test"] and two["cli"]["workers"] == addresses.split(",")


@pytest.mark.parametrize("text, message", [
    ("", "one or more"), ("localhost", "not a 'host:port'"), ("h:0", "port 1–65535"), ("h:1,h:1", "more than once"),
])
def test_bad_worker_addresses_are_rejected_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        runtime.parse_workers(text)
    assert runtime.parse_workers(" a:1 , b:2 ") == ["a:1", "b:2"]


def test_file_backed_client_data_only_for_workers_on_this_host():
    import socket

    assert runtime.on_this_host(None) and runtime.on_this_host(["localhost:1", "127.0.0.1:2", "[::1]:3"])
    assert runtime.on_this_host([f"{socket.gethostname()}:8000"])
    assert not runtime.on_this_host(["localhost:1", "gpu-box.example.org:8000"])


def test_unreachable_worker_in_a_run_is_a_clear_error(tmp_path):
    from tff_esn.cli import main

    address = f"localhost:{runtime.pick_port()}"
    data = random_dataset(n_clients=3, seed=1)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=4), 3)
    runtime.ensure_context([address, f"localhost:{runtime.pick_port()}"], timeout=1.0)
    try:
        with pytest.raises(runtime.WorkerError, match="not reachable after 1 s"):
            federate_tff(weights, list(data.clients.values()), data.n_classes, StateSpec(), 1e-3).readout
    finally:
        runtime.ensure_context(force=True)
    with pytest.raises(SystemExit):
        main(["run", "incfed", "--out", str(tmp_path), "--workers", "nonsense"])


def _read_until(proc, prefix, timeout):
    lines = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(prefix) or time.monotonic() > deadline:
            break
    return lines


def test_worker_command_serves_and_stops_cleanly_on_sigterm(capsys):
    from tff_esn.cli import main

    port = runtime.pick_port()
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.Popen([sys.executable, "-m", "tff_esn", "worker", "--port", str(port), "--listen-all"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        lines = _read_until(proc, "tff-esn worker: serving", 180)
        assert lines and lines[-1].startswith(f"tff-esn worker: serving TFF computations at localhost:{port}"), lines
        runtime.connect(f"localhost:{port}", timeout=10)
        assert main(["worker", "--port", str(port), "--listen-all"]) == 1
        assert "already in use" in capsys.readouterr().err
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "tff-esn worker: stopped" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(runtime.WorkerError, match="not reachable"):
        runtime.connect(f"localhost:{port}", timeout=1.0)


def test_worker_command_refuses_to_listen_on_every_interface_unasked(capsys):
    from tff_esn.cli import main

    port = runtime.pick_port()
    assert main(["worker", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "listens on every network interface" in err and "--listen-all" in err and "no authentication" in err
    runtime.check_port_free(port)  # nothing was started on the port


def _listen_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in list(fh)[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.rsplit(":", 1)
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found


def test_the_worker_binary_binds_every_interface_which_is_why_listen_all_is_required():
    worker = runtime.LocalWorker().start()
    try:
        runtime.connect(worker.address, worker=worker)
        addresses = _listen_addresses(worker.port)
    finally:
        worker.stop()
    assert addresses and all(set(a) == {"0"} for a in addresses), addresses  # [::] / 0.0.0.0, not loopback


def test_streamed_incfed_on_two_workers_equals_local(workers):
    from tff_esn.data.seed_sources.simulated import SimulatedClients
    from tff_esn.closed_form.incfed import stream_incfed

    source = SimulatedClients(9, sequences=2, steps=6, seed=1)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=5, seed=3), 3)
    _local()
    local = stream_incfed(weights, source, StateSpec(), 1e-3, subround_size=4, clients_per_call=1)
    _on(workers)
    two = stream_incfed(weights, source, StateSpec(), 1e-3, subround_size=4, clients_per_call=2)  # blocks 2, 2 | 1
    assert two.stats.clients == local.stats.clients == 9 and two.stats.n == local.stats.n
    np.testing.assert_allclose(two.readout, local.readout, rtol=0, atol=1e-12)
