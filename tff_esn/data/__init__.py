"""Data: real WESAD/HHAR loaders, format-exact synthetic generators, pipelines, client datasets."""

from tff_esn.lazy import lazy_exports

_EXPORTS = dict.fromkeys(("ClientSequences", "SequenceDataset", "Split"), ".sequences")
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)  # tff_esn.data.errors (the CLI's) imports no numpy
