"""Benchmarks (``make bench`` = ``python -m bench``): ratios against references measured in the same run."""
