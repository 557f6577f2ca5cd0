"""Privacy of what clients send: differential privacy and secure aggregation.

The mechanisms (Gaussian on ridge statistics, FedIP's rounds and the learning updates; the secure sum),
their accounting, the declaration of what each covers and the audits that check it.
"""
