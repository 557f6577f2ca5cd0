"""The registry: one entry per algorithm (``algorithms``), the per-source defaults (``defaults``),
the checks before a run (``run_checks``) and a run request carried out (``launch``)."""
