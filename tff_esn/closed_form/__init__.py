"""The closed-form family: readouts fitted from ridge statistics, federated by summing them.

One module per algorithm (its math and its ``run_<name>(dataset, split, config)``) beside the shared
parts: the run harness, the harvest cache, model selection, the private sum and the streaming driver.
Importing the package imports none of them; import the module you use.
"""
