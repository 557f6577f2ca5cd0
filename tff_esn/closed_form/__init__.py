"""The closed-form family: readouts fitted from ridge statistics, federated by summing them.

* :mod:`~tff_esn.closed_form.harvest` — the per-client cache of states and statistics (the reservoir: :mod:`tff_esn.esn`);
* :mod:`~tff_esn.closed_form.incfed` — IncFed (IncFed eqs. 6–10), numpy and through TFF;
* :mod:`~tff_esn.closed_form.fedavg_ridge` — local ridge readouts averaged once (IncFed eqs. 4–5);
* :mod:`~tff_esn.closed_form.partial_incfed` — Partial IncFed with a top-k readout mask (thesis §B.3);
* :mod:`~tff_esn.closed_form.pfedrr` — partial federated ridge regression (pFedRR eqs. 2–5);
* :mod:`~tff_esn.closed_form.fedip` — intrinsic plasticity and FedIP (FedIP Alg. 1);
* :mod:`~tff_esn.closed_form.heterogeneous` — clients with different reservoirs: ensemble, alignment;
* :mod:`~tff_esn.closed_form.streaming` — IncFed/pFedRR over clients streamed in blocks;
* :mod:`~tff_esn.closed_form.l2_selection` — λ chosen on the validation clients (``l2="auto"``);
* :mod:`~tff_esn.closed_form.saturation` — the warning when the reservoir's states saturate or do not vary;
* :mod:`~tff_esn.closed_form.configs` — their typed configs and registry entries (light: no TensorFlow);
* :mod:`~tff_esn.closed_form.commands` — their run functions ``(dataset, split, config)``.

Importing the package imports none of them; import the module you use.
"""
