"""The seeds' data sources: WESAD and HHAR (file formats, synthetic twins, the papers' pipelines and
features), the generated benchmark series and the simulated clients."""
