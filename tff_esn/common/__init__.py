"""The generic helpers every layer uses: config validation, run warnings, atomic writes, flat
settings, metrics, tasks, communication costs, the result check and lazy exports."""
