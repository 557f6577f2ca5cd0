"""The closed-form family: readouts fitted from ridge statistics, federated by summing them.
One module per algorithm beside the shared parts; importing the package imports none of them."""
