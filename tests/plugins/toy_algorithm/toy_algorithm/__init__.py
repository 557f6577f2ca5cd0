"""A toy algorithm another package adds to tff_esn: the pooled class frequencies as the readout."""
