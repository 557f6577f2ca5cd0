"""The HHAR sources of :func:`tff_esn.data.sources.load_source`: ``hhar:DIR`` (the CSVs of
:mod:`tff_esn.data.seed_sources.hhar`) and ``synthetic-hhar`` (:mod:`tff_esn.data.seed_sources.synthetic_hhar`), each as
a cache key and a builder of the pipeline's per-device recordings."""

from __future__ import annotations

from pathlib import Path

from tff_esn.data.cache import files_key
from tff_esn.data.seed_sources.hhar import FILES, PHONE_MODELS, USERS, WATCH_MODELS, device_recordings, read_hhar
from tff_esn.data.source_names import option_subset

SYNTHETIC_HHAR_MINUTES = 0.5
"""Default minutes per activity of a synthetic HHAR user (real: ≈ 5)."""


def hhar_loader(kind: str, arg: str, options: dict):
    """``(build(pipeline, source) → dataset, cache key)`` of an HHAR source; pops its options (``users``, ``minutes``, ``seed``)."""
    users = option_subset(options, "users", USERS)
    if kind == "synthetic-hhar":
        from tff_esn.data.seed_sources.synthetic_hhar import DEVICES, GENERATOR_VERSION, generate_frames

        minutes = float(options.pop("minutes", SYNTHETIC_HHAR_MINUTES))
        seed = int(options.pop("seed", 0))
        key = {"kind": kind, "generator": GENERATOR_VERSION, "minutes": minutes, "seed": seed, "users": users}

        def frames(device_kinds, models):  # models without a gyroscope cannot form a run: not generated
            return generate_frames(users=users, minutes=minutes, seed=seed, models=[m for m in models if DEVICES[m][2]])
    else:
        paths = [Path(arg) / name for name in FILES.values()]
        key = {"kind": kind, "users": users, "files": files_key(p for p in paths if p.exists())}

        def frames(device_kinds, models):
            return read_hhar(arg, device_kinds)

    def build(pipe, source):
        models = pipe.models()
        kinds = tuple(k for k, ms in (("phone", PHONE_MODELS), ("watch", WATCH_MODELS)) if set(ms) & set(models))
        data = frames(kinds, models)
        runs = {}
        for k in kinds:
            runs.update(device_recordings(data[(k, "acc")], data[(k, "gyro")], models=models, users=users))
        return pipe.build(runs, source)

    return build, key
