"""What every run gets around its algorithm: its ``--out`` folder (``run_folder``), the memory check
(``memory``), the reference models it is compared with (``baselines``) and its ``provenance``."""
