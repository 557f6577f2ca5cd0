"""The named random streams (tff_esn.common.streams): which streams meet, and the client streams of Partial IncFed
and pFedRR apart from the reservoir's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tff_esn.closed_form.partial_incfed import row_sum_importance, select_all, select_features
from tff_esn.closed_form.pfedrr import random_units
from tff_esn.common import streams
from tff_esn.esn.ridge import RidgeStats

VALUES = {"client": range(64), "round": range(201), "layer": range(1, 8), "realisation": range(64),
          "n_train": range(1, 501), "n_clients": range(1, 501), "partitioner": range(4), "draw": range(4),
          "subject": range(40), "user": range(12), "device": range(3, 13)}
"""The values each slot takes in a run (64 clients, 200 rounds, 500 clients in a split, ...)."""

MEETINGS = {
    # a generated series seeded by --seed draws from the reservoir's streams, so does a centralized fit
    ("fit.epoch_orders", "reservoir.input_weights", "series.segments"),
    ("federated.cached_noise", "federated.input_noise", "reservoir.recurrent_weights", "series.realisation"),
    ("federated.cached_noise", "federated.input_noise", "series.realisation"),
    # round 0 of the federated clients' streams
    ("federated.shuffle", "reservoir.bias"),
    ("federated.sample", "reservoir.leak_rates"),
    # client 0's own reservoir seed
    ("reservoir.client", "reservoir.graph"),
    # the discriminator's validation split and its fit's epoch orders
    ("discriminator.epoch_orders", "discriminator.order"),
}
"""The streams that meet today, each kept so that runs reproduce value for value (the module docstring)."""


def meetings(table: tuple[streams.Stream, ...]) -> set[tuple[str, ...]]:
    """The sets of streams of one root whose padded entropy is equal for some values of :data:`VALUES`."""
    owners: dict[tuple, set[str]] = {}
    for stream in table:
        for values in itertools.product(*(VALUES[slot] for slot in stream.slots)):
            words = stream.entropy(12345, *values)
            owners.setdefault((stream.root, *words, *[0] * (4 - len(words))), set()).add(stream.name)
    return {tuple(sorted(names)) for names in owners.values() if len(names) > 1}


def test_the_streams_that_meet_are_the_listed_ones():
    assert meetings(streams.STREAMS) == MEETINGS


def test_a_stream_of_the_reservoir_layout_is_found_meeting_it():
    twin = streams.Stream("twin", "run", ("client",), "W_in's layout for client 0")
    found = meetings((*streams.STREAMS, twin))
    assert ("fit.epoch_orders", "reservoir.input_weights", "series.segments", "twin") in found


def test_stream_names_are_unique_and_every_slot_has_values():
    names = [s.name for s in streams.STREAMS]
    assert len(names) == len(set(names)) == 36
    assert {slot for s in streams.STREAMS for slot in s.slots} == set(VALUES)


def test_entropy_fills_the_slots_in_order_and_matches_seed_sequence():
    assert streams.PARTITION.entropy(9, 2, 1) == [9, 2, 0x9A27, 1]
    assert streams.FEDERATED_NOISE.seed(9, 3, 4) == streams.child_seed(9, 1, 3, 4)
    expected = np.random.default_rng(np.random.SeedSequence([9, 1])).random(3)
    np.testing.assert_array_equal(streams.RECURRENT_WEIGHTS.generator(9).random(3), expected)
    with pytest.raises(TypeError, match="partition.assign: expected 2 value"):
        streams.PARTITION.entropy(9, 2)


def test_the_integer_seeded_fits_draw_the_streams_of_the_catalogue():
    from tff_esn.federated.clients import epoch_orders

    for stream in (streams.FIT_EPOCHS, streams.DISCRIMINATOR_EPOCHS):
        np.testing.assert_array_equal(epoch_orders(9, 1, 4)[0], stream.generator(4).permutation(9))


def test_a_stream_of_no_known_root_is_refused():
    with pytest.raises(ValueError, match="root 'data' is none of"):
        streams.Stream("x", "data", (1,), "")


@pytest.mark.parametrize("client, stream", enumerate([streams.INPUT_WEIGHTS, streams.RECURRENT_WEIGHTS, streams.BIAS]))
def test_pfedrr_client_units_are_not_drawn_from_the_reservoirs_stream_of_its_index(client, stream):
    reservoir = np.sort(stream.generator(5).choice(40, size=8, replace=False))
    assert not np.array_equal(random_units(40, 8, 5, client), reservoir)


def test_partial_incfed_clients_draw_apart_from_the_reservoirs_stream_of_their_index():
    rng = np.random.default_rng(0)
    stats = [RidgeStats.from_states(rng.normal(size=(30, 12)), rng.normal(size=(30, 2))) for _ in range(3)]
    selected = select_all(stats, 4, 0.0, seed=5)  # α = 0: every feature drawn at random
    for i, reservoir_stream in enumerate((streams.INPUT_WEIGHTS, streams.RECURRENT_WEIGHTS, streams.BIAS)):
        reservoir = select_features(row_sum_importance(stats[i].B), 4, 0.0, reservoir_stream.generator(5))
        assert not np.array_equal(selected[i], reservoir)
    assert [s.tolist() for s in selected] != [s.tolist() for s in select_all(stats, 4, 0.0, seed=6)]
