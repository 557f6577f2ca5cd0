"""Reproduction of the seeds' tables and figures: one script per group, plus ``reproduce_all``.

Each module registers one :class:`scripts.framework.Experiment` (its tables, figures and
published claims); :mod:`scripts.reproduce_all` and ``tff-esn reproduce`` run a selection
and write ``report.md``. Published numbers live in :mod:`scripts.published`. ``scripts``
builds on ``tuning``, ``discriminator`` and ``tff_esn``; none of them imports it.
"""
