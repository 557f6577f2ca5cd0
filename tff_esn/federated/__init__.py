"""The thesis' federated training in TFF: FedAvg with a server learning rate and FedCurv.

* :mod:`~tff_esn.federated.model` — the thesis ESN (reservoir + sigmoid or softmax readout, weighted cross-entropy);
* :mod:`~tff_esn.federated.client_work` — FedAvg/FedCurv client work with the client filter hook;
* :mod:`~tff_esn.federated.processes` — ``build_fedavg``, ``build_fedcurv`` (TFF templates);
* :mod:`~tff_esn.federated.clients` — cached-state and raw-input client datasets;
* :mod:`~tff_esn.federated.training` — ``run_federated``: rounds, metrics, checkpoints, resume;
* :mod:`~tff_esn.federated.centralized` — the centralized thesis ESN (Table 6.3);
* :mod:`~tff_esn.federated.configs` — the typed configs and the ``fedavg``/``fedcurv``/``thesis-central``
  registry entries; :mod:`~tff_esn.federated.commands` — their run functions.
"""

from tff_esn.lazy import lazy_exports

_EXPORTS = {
    "ClientFilter": ".client_work", "build_readout_client_work": ".client_work",
    "THESIS_RESERVOIR": ".configs", "ThesisModelConfig": ".configs", "FedAvgConfig": ".configs",
    "FedCurvConfig": ".configs", "for_data": ".configs",
    "WeightedBinaryCrossentropy": ".model", "WeightedCategoricalCrossentropy": ".model", "build_thesis_model": ".model", "compile_thesis_model": ".model",
    "build_fedavg": ".processes", "build_fedcurv": ".processes", "curvature": ".processes",
    "run_federated": ".training", "sample_clients": ".training",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing the package imports no TensorFlow
