"""The seeds' published numbers, transcribed exactly as printed (units and rounding kept).

Every value here was obtained by the seed's authors on the **real** data sets (WESAD,
HHAR); :mod:`scripts` prints them beside numbers obtained on whatever data a run used,
which on this machine is the synthetic default — never a reproduction of these values.

Conventions: accuracies are fractions in the thesis (0.9018) and percentages in the papers
(77.92), as printed. A "± s" is stored as ``(mean, s)``; the IncFed paper prints standard
deviations without the leading zero (".04"), stored as 0.04 in the table's unit as printed.
``None`` marks a "-" cell.
"""

from __future__ import annotations

from typing import Optional

MeanStd = tuple[float, float]

THESIS = "thesis (seed 003)"
INCFED = "IncFed paper, IJCNN 2021 (seed 000)"
PFEDRR = "pFedRR, ESANN 2023 (seed 002)"
FEDIP = "FedIP, ESANN 2022 (seed 004)"

FRACTIONS = (0.25, 0.5, 0.75, 1.0)
SERVER_LRS = (1.0, 0.1, 0.01, 0.001)

# --------------------------------------------------------------------------- thesis
THESIS_TABLE_6_2 = {
    "units": 200, "leaky": 1.0, "learning_rate": 0.1, "spectral_radius": 0.99,
    "window": 25 * 64, "batch_size": 20, "features": "pEDA", "epochs": 1,
}
"""Thesis Table 6.2: best ESN parameters (window 25×64 samples)."""

THESIS_TABLE_6_2_VAL_F1 = 0.9106
"""Thesis Table 6.2 caption: validation F1 of the best model."""

THESIS_TABLE_6_3 = {
    "design": {"accuracy": 0.8986, "auc": 0.8092, "f1_micro": 0.8986},
    "test": {"accuracy": 0.9018, "auc": 0.9419, "f1_micro": 0.9018},
}
"""Thesis Table 6.3: centralized ESN on the design set (DS) and test set (TS)."""

THESIS_SOTA = {"train_accuracy": 0.8378, "test_accuracy": 0.7792}
"""Tables 6.4/6.5 row "SOTA (multi-label class.)" (the IncFed paper's 4-class ESN)."""

Row = tuple[Optional[float], Optional[float]]

THESIS_TABLE_6_4: dict[str, Row] = {
    "FedAvg-1.0": (0.8878, 0.8693),
    "FedAvg-0.1": (0.5913, 0.4741),
    "FedAvg-0.01": (0.5784, 0.4560),
    "FedAvg-0.001": (0.5711, 0.4451),
    "FedCurv-1.0": (0.7299, 0.5813),
    "FedCurv-0.1": (0.8878, 0.8693),
    "FedCurv-0.01": (0.7646, 0.6580),
    "FedCurv-0.001": (0.8140, 0.7562),
    "FedAvg-1.0+Disc": (0.7601, 0.6262),
    "FedAvg-0.1+Disc": (0.4415, 0.5392),
    "FedAvg-0.01+Disc": (0.5652, 0.5710),
    "FedAvg-0.001+Disc": (0.2972, 0.4233),
    "FedCurv-1.0+Disc": (0.3427, 0.4741),
    "FedCurv-0.1+Disc": (0.4456, 0.5405),
    "FedCurv-0.01+Disc": (0.3251, 0.4451),
    "FedCurv-0.001+Disc": (0.7136, 0.5891),
}
"""Thesis Table 6.4 (clients' reservoirs equal to the server's): (Train F1, Test F1).
The Central row is Table 6.3's (train 0.8986, test 0.9018 for accuracy and F1)."""

THESIS_TABLE_6_5: dict[str, Row] = {
    "FedAvg-1.0": (0.8878, 0.8693),
    "FedAvg-0.1": (0.5965, 0.4772),
    "FedAvg-0.01": (0.5779, 0.4538),
    "FedAvg-0.001": (0.5723, 0.4457),
    "FedCurv-1.0": (0.8878, 0.8693),
    "FedCurv-0.1": (0.8603, 0.8693),
    "FedCurv-0.01": (0.8722, 0.8693),
    "FedCurv-0.001": (0.5636, 0.4379),
    "FedAvg-1.0+Disc": (0.9172, 0.9457),
    "FedAvg-0.1+Disc": (0.8810, 0.8693),
    "FedAvg-0.01+Disc": (0.3440, 0.4744),
    "FedAvg-0.001+Disc": (0.4103, 0.5187),
    "FedCurv-1.0+Disc": (0.8810, 0.8693),
    "FedCurv-0.1+Disc": (0.9257, 0.8778),
    "FedCurv-0.01+Disc": (0.8733, 0.7955),
    "FedCurv-0.001+Disc": (0.3084, 0.4332),
}
"""Thesis Table 6.5 (clients' reservoirs different from the server's): (Train F1, Test F1)."""

THESIS_CENTRAL_F1 = (0.8986, 0.9018)
"""Tables 6.4/6.5 row "Central (binary class.)": (Train F1, Test F1)."""

THESIS_FIG_6_13_MAE = 1.1410
"""Figure 6.13: mean absolute error of the discriminator's count of valid clients per round
(FedAvg-1.0+Disc, different reservoirs)."""

THESIS_DISCRIMINATOR = {"val_binary_accuracy": 0.9974, "train_f1": 0.9941, "test_f1": 0.9925,
                        "fake_esn_test_f1": 0.8836, "real_esn_test_f1": 0.8839}
"""Thesis §6.1: the discriminator's and the real/fake ESNs' scores."""

THESIS_FEDERATION = {"rounds": 78, "clients_per_round": 5, "noise_std": 0.5, "training_clients": 10}
"""Thesis §6.1: the federated runs' settings."""

THESIS_TABLE_B_2 = {"units": 500, "alpha": 0.3, "l2": 1e-6, "leaky": 1.0, "input_scaling": 0.9,
                    "spectral_radius": 0.99}
"""Thesis Table B.2: Partial IncFed's (and IncFed's, without α) parameters."""

THESIS_TABLE_B_3: dict[float, dict[str, MeanStd]] = {
    1.0: {"IncFed": (0.7801, 0.77), "Partial IncFed": (0.8128, 0.70), "Random": (0.8084, 0.74)},
    0.75: {"IncFed": (0.7504, 0.81), "Partial IncFed": (0.8108, 0.76), "Random": (0.7887, 0.86)},
    0.5: {"IncFed": (0.7223, 0.80), "Partial IncFed": (0.7642, 0.93), "Random": (0.7600, 0.95)},
    0.25: {"IncFed": (0.7093, 0.89), "Partial IncFed": (0.7565, 0.96), "Random": (0.7480, 1.01)},
}
"""Thesis Table B.3 (WESAD, 4 classes): test accuracy ± "standard deviation of the errors" (as printed)."""

# --------------------------------------------------------------------------- IncFed paper
INCFED_TABLE_III = {
    "FedAvg": {"units": 100, "spectral_radius": 0.9, "leaky": 1.0, "input_scaling": 0.1,
               "input_connections": 50, "recurrent_connections": 1, "train_accuracy": 75.5,
               "val_accuracy": 84.03},
    "IncFed": {"units": 100, "spectral_radius": 0.99, "leaky": 1.0, "input_scaling": 1.0,
               "input_connections": 5, "recurrent_connections": 50, "train_accuracy": 85.08,
               "val_accuracy": 83.63},
}
"""IncFed paper Table III (WESAD): selected hyperparameters (connectivity as a count per unit)
and training / validation accuracy (%)."""

INCFED_TABLE_IV = {
    "FedAvg": {"units": 500, "spectral_radius": 0.8, "leaky": 1.0, "input_scaling": 0.5,
               "input_connections": 20, "recurrent_connections": 20, "train_accuracy": 82.17,
               "val_accuracy": 75.74},
    "IncFed": {"units": 500, "spectral_radius": 0.4, "leaky": 1.0, "input_scaling": 1.0,
               "input_connections": 50, "recurrent_connections": 60, "train_accuracy": 94.53,
               "val_accuracy": 79.99},
}
"""IncFed paper Table IV (HAR): as Table III."""

IncFedCell = tuple[MeanStd, MeanStd]

INCFED_TABLE_V: dict[float, dict[str, object]] = {
    0.25: {"random": (25.30, 24.59), "centralized": ((93.14, .04), (65.96, .08)),
           "fedavg": ((81.55, .09), (63.42, .10)), "incfed": ((93.14, .04), (65.96, .08))},
    0.5: {"random": (25.27, 25.45), "centralized": ((87.51, .06), (74.89, .09)),
          "fedavg": ((77.63, .09), (71.75, .11)), "incfed": ((87.51, .06), (74.89, .09))},
    0.75: {"random": (25.09, 24.32), "centralized": ((84.45, .04), (76.56, .07)),
           "fedavg": ((76.77, .11), (74.69, .09)), "incfed": ((84.45, .04), (76.56, .07))},
    1.0: {"random": (24.91, 24.99), "centralized": ((83.78, .06), (77.92, .06)),
          "fedavg": ((76.57, .12), (75.81, .10)), "incfed": ((83.78, .06), (77.92, .06))},
}
"""IncFed paper Table V (WESAD, 4 classes): training / test accuracy (%) — random baseline as
(train, test); the ESNs as ((train mean, std), (test mean, std)) over 3 repetitions."""

INCFED_TABLE_VI: dict[float, dict[str, object]] = {
    0.25: {"random": (16.65, 15.77), "centralized": ((92.73, .00), (55.96, .01)),
           "fedavg": ((99.17, .00), (60.38, .02)), "incfed": ((92.73, .00), (55.96, .01))},
    0.5: {"random": (16.82, 17.13), "centralized": ((93.60, .01), (70.28, .03)),
          "fedavg": ((81.57, .07), (66.99, .09)), "incfed": ((93.60, .01), (70.28, .03))},
    0.75: {"random": (16.53, 17.54), "centralized": ((93.84, .02), (75.69, .05)),
           "fedavg": ((78.52, .07), (74.86, .06)), "incfed": ((93.84, .02), (75.69, .05))},
    1.0: {"random": (16.75, 16.99), "centralized": ((93.64, .04), (80.19, .03)),
          "fedavg": ((70.18, .07), (74.84, .11)), "incfed": ((93.64, .04), (80.19, .03))},
}
"""IncFed paper Table VI (HAR, 6 classes): as Table V."""

# --------------------------------------------------------------------------- pFedRR
PFEDRR_TABLE_1: dict[str, dict[float, dict[str, object]]] = {
    "wesad": {
        0.25: {"fedrr": (72.41, 1.40), "i-pfedrr": ((80.71, 0.37), (49.72, 1.71)),
               "r-pfedrr": ((78.85, 1.04), (91.28, 1.78))},
        0.5: {"fedrr": (73.56, 0.54), "i-pfedrr": ((77.74, 0.74), (13.72, 1.01)),
              "r-pfedrr": ((77.87, 1.05), (90.86, 1.28))},
        0.75: {"fedrr": (75.50, 0.82), "i-pfedrr": ((79.77, 0.21), (11.39, 1.14)),
               "r-pfedrr": ((79.99, 0.43), (89.71, 1.25))},
        1.0: {"fedrr": (76.92, 0.85), "i-pfedrr": ((80.46, 0.32), (1.22, 0.14)),
              "r-pfedrr": ((80.55, 0.44), (1.22, 0.14))},
    },
    "hhar": {
        0.25: {"fedrr": (72.95, 4.66), "i-pfedrr": ((68.73, 2.31), (94.50, 0.81)),
               "r-pfedrr": ((59.74, 1.69), (94.50, 1.81))},
        0.5: {"fedrr": (76.31, 13.08), "i-pfedrr": ((57.93, 4.95), (88.63, 1.32)),
              "r-pfedrr": ((49.93, 3.21), (88.63, 1.32))},
        0.75: {"fedrr": (84.96, 0.37), "i-pfedrr": ((69.83, 1.95), (91.41, 1.06)),
               "r-pfedrr": ((65.01, 1.56), (91.41, 1.06))},
        1.0: {"fedrr": (83.53, 0.39), "i-pfedrr": ((74.39, 3.05), (93.53, 1.76)),
              "r-pfedrr": ((68.67, 3.21), (93.53, 1.76))},
    },
}
"""pFedRR Table 1: FedRR test accuracy (%) as (mean, std); I-/R-pFedRR as
((accuracy mean, std), (% units mean, std)) at the τ with the best validation accuracy over
5 trials. (WESAD's R-pFedRR % units differ from I-pFedRR's although the paper states they
select the same number of units; transcribed as printed.)"""

PFEDRR_TAUS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""pFedRR §3: the τ sweep."""

# --------------------------------------------------------------------------- FedIP
FEDIP_TABLE_2: dict[str, dict[float, dict[str, MeanStd]]] = {
    "wesad": {
        0.25: {"incfed": (75.24, 1.63), "fedip": (75.45, 2.20)},
        0.5: {"incfed": (73.04, 0.70), "fedip": (75.92, 0.84)},
        0.75: {"incfed": (75.64, 1.23), "fedip": (81.15, 0.26)},
        1.0: {"incfed": (75.42, 0.78), "fedip": (80.42, 0.79)},
    },
    "hhar": {
        0.25: {"incfed": (75.50, 2.79), "fedip": (80.72, 0.99)},
        0.5: {"incfed": (77.06, 0.43), "fedip": (82.24, 0.30)},
        0.75: {"incfed": (80.67, 0.75), "fedip": (79.50, 1.01)},
        1.0: {"incfed": (81.47, 0.77), "fedip": (82.09, 0.29)},
    },
}
"""FedIP Table 2: test accuracy (%) mean ± std over three retrainings."""
