"""The WESAD sources of :func:`tff_esn.data.sources.load_source`: ``wesad:DIR`` (the subject
files of :mod:`tff_esn.data.seed_sources.wesad`, one in memory at a time) and ``synthetic-wesad``
(:mod:`tff_esn.data.seed_sources.synthetic_wesad`), each as a cache key and a builder that runs the
pipeline over the subjects."""

from __future__ import annotations

from typing import Any

from tff_esn.data.seed_sources import wesad
from tff_esn.data.cache import files_key
from tff_esn.data.seed_sources.pipelines import Pipeline, iter_subjects
from tff_esn.data.sequences import SequenceDataset
from tff_esn.data.source_names import option_subset


def wesad_loader(kind: str, arg: str, options: dict[str, Any], pipeline: type[Pipeline]):
    """``(build(pipeline, source) → dataset, cache key)`` of a WESAD source; synthetic: keyed by generator version."""
    if kind == "synthetic-wesad":
        from tff_esn.data.seed_sources.synthetic_wesad import GENERATOR_VERSION, generate_subject

        minutes = float(options.pop("minutes", pipeline.synthetic_minutes))
        seed = int(options.pop("seed", 0))
        subjects = option_subset(options, "subjects", wesad.SUBJECTS)
        devices = pipeline.wesad_devices or wesad.DEVICES
        key = {"kind": kind, "minutes": minutes, "seed": seed, "subjects": subjects,
               "generator": {d: GENERATOR_VERSION[d] for d in devices}}

        def load(sid: str) -> dict:
            return generate_subject(sid, minutes=minutes, seed=seed, devices=devices)
    else:
        files = wesad.subject_files(arg)
        subjects = option_subset(options, "subjects", tuple(files))
        key = {"kind": kind, "files": files_key(files[s] for s in subjects)}

        def load(sid: str) -> dict:
            return wesad.load_subject(files[sid])

    def build(pipe: Pipeline, source: str) -> SequenceDataset:
        return pipe.build(iter_subjects(subjects, load, desc=f"{source} → {pipe.name}"), source)

    return build, key
