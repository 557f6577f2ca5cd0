"""A correction of TFF 0.87.0's subround partitioning (``_partition_value`` deals every worker the
first clients when the clients' value is not the last argument); other versions get :class:`TFFVersionError`."""

from __future__ import annotations

PATCHED_VERSIONS = ("0.87.0",)


class TFFVersionError(RuntimeError):
    """The installed TFF is not a version the subround-partitioning patch was written for."""


def fix_subround_partitioning() -> None:
    """Splits struct elements from one position, so each client goes to one worker (TFF 0.87.0 only, else an error)."""
    import tensorflow_federated as tff

    if tff.__version__ not in PATCHED_VERSIONS:
        raise TFFVersionError(
            f"multi-worker runs (--workers with 2 or more addresses) need tff_esn's correction of TFF's private "
            f"_partition_value, written for tensorflow-federated {', '.join(PATCHED_VERSIONS)}; installed: "
            f"{tff.__version__}. Install the pinned version (`pip install -c constraints.txt tensorflow-federated`), "
            "or run on one worker; to support this version, check that tests/test_scale_workers.py passes on it "
            "without the patch or with it, and add the version to tff_esn.runtime.tff_patch.PATCHED_VERSIONS."
        )
    from tensorflow_federated.python.common_libs import structure
    from tensorflow_federated.python.core.impl.execution_contexts import mergeable_comp_execution_context as mc
    from tensorflow_federated.python.core.impl.types import computation_types

    original = getattr(mc._partition_value, "__wrapped__", mc._partition_value)

    def partition_value(val, type_signature):
        if not isinstance(type_signature, computation_types.StructType):
            return original(val, type_signature)
        elements = []
        advanced = None
        for (_, value), (name, elem_type) in zip(structure.iter_elements(structure.from_container(val.payload)),
                                                 structure.iter_elements(type_signature)):
            part = partition_value(mc._PartitioningValue(value, val.num_remaining_clients,
                                                         val.num_remaining_partitions, val.last_client_index),
                                   elem_type)
            elements.append((name, part.payload))
            if part.last_client_index != val.last_client_index:
                advanced = part
        if not elements:  # TFF's own error
            return original(val, type_signature)
        position = advanced or val
        return mc._PartitioningValue(structure.Struct(elements), position.num_remaining_clients,
                                     position.num_remaining_partitions, position.last_client_index)

    partition_value.__wrapped__ = original
    mc._partition_value = partition_value
