"""Privacy of what clients send: differential privacy and secure aggregation.

* :mod:`tff_esn.privacy.accounting` — (ε, δ) of the Gaussian mechanism with
  ``dp_accounting`` (RDP), composed over rounds with client sampling, and the inverse
  (the noise multiplier for a target ε);
* :mod:`tff_esn.privacy.dp_stats` — the Gaussian mechanism on clipped ridge statistics
  ``(A, B, n)`` of IncFed/FedRR (sensitivity derived there), central or per-client noise,
  and the eigenvalue floor that keeps ``B`` + noise positive definite;
* :mod:`tff_esn.privacy.dp_fedip` — the Gaussian mechanism on FedIP's clipped (g, b) rounds
  (client-level);
* :mod:`tff_esn.privacy.dp_local_stats` — each client's own noise on its statistics, the DP
  of pFedRR / Partial IncFed (local model);
* :mod:`tff_esn.privacy.closed_form` — what a :class:`~tff_esn.privacy.config.PrivacyConfig`
  becomes for the closed-form algorithms, and their ``metrics.json`` sections;
* :mod:`tff_esn.privacy.secure_sum` — the fixed-point encoding of float statistics for
  ``tff.federated_secure_sum_bitwidth`` with its quantization error bound;
* :mod:`tff_esn.privacy.aggregation` — the one place where a federated computation of
  ours chooses how the clients' statistics are summed (plain, secure, noised);
* :mod:`tff_esn.privacy.learning` — TFF's DP and secure aggregators for FedAvg/FedCurv
  (their updates, FedCurv's u, v, the training metrics);
* :mod:`tff_esn.privacy.coverage` — what each mechanism covers and what is public: the one
  declaration behind ``metrics.json``'s privacy section, the audit and what a DP run writes;
* :mod:`tff_esn.privacy.audit` — every CLIENTS → SERVER value of a built TFF computation,
  and the ones that break a claim of secure aggregation or DP.
* :mod:`tff_esn.privacy.noise_seed` — the DP randomness' seed: secret (OS entropy, never
  written) unless ``--dp-seed``, and whether the run is private;
* :mod:`tff_esn.privacy.sampling` — FedAvg/FedCurv's client sampling under DP (Poisson, kept
  secret) and what the accountant may assume of it;
* :mod:`tff_esn.privacy.empirical_audit` — an ε lower bound from many releases on
  neighbouring data (likelihood-ratio test, Clopper–Pearson).
"""
