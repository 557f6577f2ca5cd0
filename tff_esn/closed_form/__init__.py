"""The closed-form family: readouts fitted from ridge statistics, federated by summing them.

Each algorithm's module holds its math and its registry run function ``run_<name>(dataset, split, config)``:

* :mod:`~tff_esn.closed_form.centralized` — ridge on the pooled training clients (IncFed eq. 3);
* :mod:`~tff_esn.closed_form.incfed` — IncFed (IncFed eqs. 6–10), numpy, through TFF and in streaming subrounds;
* :mod:`~tff_esn.closed_form.fedavg_ridge` — local ridge readouts averaged once (IncFed eqs. 4–5);
* :mod:`~tff_esn.closed_form.partial_incfed` — Partial IncFed with a top-k readout mask (thesis §B.3);
* :mod:`~tff_esn.closed_form.pfedrr` — partial federated ridge regression (pFedRR eqs. 2–5);
* :mod:`~tff_esn.closed_form.fedip` — intrinsic plasticity and FedIP (FedIP Alg. 1);
* :mod:`~tff_esn.closed_form.heterogeneous` — clients with different reservoirs: ensemble, alignment.

What they share:

* :mod:`~tff_esn.closed_form.run` — the :class:`~tff_esn.closed_form.run.Run` harness of every run function;
* :mod:`~tff_esn.closed_form.private_sum` — the statistics' sum under the run's privacy settings;
* :mod:`~tff_esn.closed_form.client_stats` — the clients' statistics checked for exact federation;
* :mod:`~tff_esn.closed_form.harvest` — the per-client cache of states and statistics (the reservoir: :mod:`tff_esn.esn`);
* :mod:`~tff_esn.closed_form.streaming` — the driver of clients streamed in subrounds (resumable);
* :mod:`~tff_esn.closed_form.selection` — λ, the state mode, a small reservoir grid and alignment's α
  chosen on the validation data (``"auto"``, ``reservoir_search``);
* :mod:`~tff_esn.closed_form.saturation` — the warning when the reservoir's states saturate or do not vary;
* :mod:`~tff_esn.closed_form.configs` — the typed configs and registry entries (light: no TensorFlow).

Importing the package imports none of them; import the module you use.
"""
