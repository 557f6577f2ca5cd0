"""Checks that library code neither reads nor changes the process-global random state.

Library calls seed what they draw; a call must give the same numbers whatever global seed was
set before it (``tf.keras.utils.set_random_seed`` seeds Python's ``random``, numpy's global RNG
and TF's global seed), and leave those three streams where they were.
"""

import random

import numpy as np
import tensorflow as tf


def _draws() -> tuple:
    return random.random(), np.random.random(3).tolist(), tf.random.uniform([3]).numpy().tolist()


def call_untouched(call, global_seed: int):
    """``call()`` after ``set_random_seed(global_seed)``; asserts it left Python's and numpy's
    global states equal and that the Python, numpy and TF global streams then draw what they
    draw without the call. Returns ``call()``'s result; the global seeds are reset afterwards."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        tf.keras.utils.set_random_seed(global_seed)
        expected = _draws()
        tf.keras.utils.set_random_seed(global_seed)
        before = random.getstate(), np.random.get_state()
        result = call()
        after = random.getstate(), np.random.get_state()
        assert after[0] == before[0], "the call changed Python's global random state"
        assert all(np.array_equal(a, b) for a, b in zip(after[1], before[1])), \
            "the call changed numpy's global random state"
        assert _draws() == expected, "the call moved a global random stream (Python, numpy or TF)"
        return result
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        tf.random.set_seed(None)
