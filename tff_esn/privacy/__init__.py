"""Privacy of what clients send: the DP mechanisms and the secure sum, their accounting, the declaration of
what each covers and the audits that check it."""
