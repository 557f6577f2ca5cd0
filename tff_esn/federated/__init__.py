"""The thesis' federated training in TFF: FedAvg with a server learning rate and FedCurv."""

from tff_esn.common.lazy import lazy_exports

_EXPORTS = {
    "ClientFilter": ".client_work", "build_readout_client_work": ".client_work",
    "THESIS_RESERVOIR": ".configs", "ThesisModelConfig": ".configs", "FedAvgConfig": ".configs",
    "FedCurvConfig": ".configs", "for_data": ".configs",
    "WeightedBinaryCrossentropy": ".model", "WeightedCategoricalCrossentropy": ".model", "build_thesis_model": ".model", "compile_thesis_model": ".model",
    "build_process": ".processes", "learning_process": ".processes", "curvature": ".processes",
    "run_federated": ".training", "sample_clients": ".training",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing the package imports no TensorFlow
