"""Data: the dataset form every algorithm consumes, own-data formats, splits, partitioners, checks, the
cache and ``load_source``; the seeds' sources are in :mod:`tff_esn.data.seed_sources`."""

from tff_esn.common.lazy import lazy_exports

_EXPORTS = dict.fromkeys(("ClientSequences", "SequenceDataset", "Split"), ".sequences")
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # tff_esn.data.errors (the CLI's) imports no numpy
