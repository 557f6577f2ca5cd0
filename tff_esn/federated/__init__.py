"""The thesis' federated training in TFF: FedAvg with a server learning rate and FedCurv.

* :mod:`~tff_esn.federated.model` — the thesis ESN (reservoir + sigmoid readout, weighted BCE);
* :mod:`~tff_esn.federated.client_work` — FedAvg/FedCurv client work with the client filter hook;
* :mod:`~tff_esn.federated.processes` — ``build_fedavg``, ``build_fedcurv`` (TFF templates);
* :mod:`~tff_esn.federated.clients` — cached-state and raw-input client datasets;
* :mod:`~tff_esn.federated.training` — ``run_federated``: rounds, metrics, checkpoints, resume;
* :mod:`~tff_esn.federated.centralized` — the centralized thesis ESN (Table 6.3);
* :mod:`~tff_esn.federated.commands` — ``fedavg``/``fedcurv`` in the ``tff-esn run`` registry.
"""

from tff_esn.federated.client_work import ClientFilter, build_readout_client_work
from tff_esn.federated.model import (
    THESIS_RESERVOIR,
    ThesisModelConfig,
    WeightedBinaryCrossentropy,
    build_thesis_model,
    compile_thesis_model,
)
from tff_esn.federated.processes import build_fedavg, build_fedcurv, curvature
from tff_esn.federated.training import FederatedConfig, run_federated, sample_clients

__all__ = [
    "THESIS_RESERVOIR", "ClientFilter", "FederatedConfig", "ThesisModelConfig", "WeightedBinaryCrossentropy",
    "build_fedavg", "build_fedcurv", "build_readout_client_work", "build_thesis_model", "compile_thesis_model",
    "curvature", "run_federated", "sample_clients",
]

from tff_esn.federated import commands  # noqa: E402,F401  (registers fedavg, fedcurv, thesis-central)
