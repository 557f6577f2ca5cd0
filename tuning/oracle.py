"""Random search that stops exactly when a finite space is exhausted (thesis §6.1).

:class:`ExhaustiveRandomSearchOracle` draws uniformly (seeded) among the configurations not tried yet
and stops after the last one (KerasTuner's ``RandomSearchOracle`` gives up after 20 duplicate draws);
continuous spaces use KerasTuner's sampling. A reloaded search continues the same sequence.
"""

from __future__ import annotations

import itertools
import random

from keras_tuner.oracles import RandomSearchOracle
from keras_tuner.src.engine import oracle as oracle_module
from keras_tuner.src.engine import trial as trial_module

from tuning.spaces import space_size


def seed_oracle(oracle: oracle_module.Oracle, seed: int | None) -> oracle_module.Oracle:
    """``oracle`` drawing from ``seed`` as given, 0 included; ``None`` keeps the seed it drew.

    KerasTuner's oracles take ``seed or random.randint(1, 10000)``, so seed 0 would draw a
    different seed in every process. Call it before the first trial.
    """
    if seed is not None:
        oracle.seed = oracle._seed_state = seed
    return oracle


class ExhaustiveRandomSearchOracle(RandomSearchOracle):
    """``RandomSearchOracle`` whose finite spaces are searched without replacement to the end.

    Same arguments as ``keras_tuner.oracles.RandomSearchOracle``; ``max_trials=None`` means
    "until exhausted" (only allowed for a finite space). ``seed`` is used as given, 0 included
    (:func:`seed_oracle`); ``None`` draws one.
    """

    def __init__(self, *args, seed: int | None = None, **kwargs):
        super().__init__(*args, seed=seed, **kwargs)
        seed_oracle(self, seed)
        if self.max_trials is None and space_size(self.hyperparameters) == float("inf"):
            raise ValueError(
                "ExhaustiveRandomSearchOracle: max_trials=None (search until exhausted) needs a finite space; "
                "this one has a continuous range: give a trial budget."
            )

    def _untried(self) -> list[dict]:
        params = self.hyperparameters.space
        names = [p.name for p in params]
        combos = (dict(zip(names, values)) for values in itertools.product(*(list(p.values) for p in params)))
        return [values for values in combos if not self._duplicate(values)]

    def populate_space(self, trial_id):
        """A uniformly drawn untried configuration, or ``STOPPED`` once none is left."""
        if space_size(self.hyperparameters) == float("inf"):
            return super().populate_space(trial_id)
        untried = self._untried()
        if not untried:
            return {"status": trial_module.TrialStatus.STOPPED, "values": None}
        values = random.Random(self._seed_state).choice(untried)
        self._seed_state += 1
        return {"status": trial_module.TrialStatus.RUNNING, "values": values}
