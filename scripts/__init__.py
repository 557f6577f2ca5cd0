"""Reproduction of the seeds' tables and figures: one script per group, plus ``reproduce_all``.

Each module registers one :class:`scripts.framework.Experiment` (its tables, figures and
published claims); :mod:`scripts.reproduce_all` and ``tff-esn reproduce`` run a selection
and write ``report.md``. Published numbers live in :mod:`scripts.published`. ``scripts``
builds on ``tuning``, ``discriminator`` and ``tff_esn``; it is not installed: it runs from the repository (its
root on ``sys.path``, as ``python -m scripts.MODULE`` there or :mod:`tff_esn.cli.reproduce` put it), and no
installed module imports it but that command.
"""
