"""Data: real WESAD/HHAR loaders, format-exact synthetic generators, pipelines, client datasets."""

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split

__all__ = ["ClientSequences", "SequenceDataset", "Split"]
