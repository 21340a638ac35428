"""The PATE pipeline: the stage graph (``pate.pipeline.graph``) and one run of it (``pate.pipeline.runner``).

The one part of ``pate`` above the teachers and the student: it wires them into runs and holds the command lines
(``pate-train``, ``pate-topk``). Imports flow one way: ``pate.pipeline`` -> ``student`` -> ``teachers`` ->
the library (the rest of ``pate``, which imports neither them nor Lightning; pyproject.toml's import contracts).
See docs/architecture.md for the stage graph, the privacy unit and the public contract.

``run(cfg)`` is one run. A script that runs part of the pipeline by hand (the benchmarks do, to time or vary one
stage) composes it from the rest, the same functions the runner calls:

* ``instantiate(node, group)``: a config node built by its ``_target_`` (an error names ``group``);
  ``set_num_labels(cfg, names)``: ``data.num_labels`` from the data's label names, as a run sets it;
* ``Dataset(arrays, identity)``: the graph's source, the arrays a reader loaded and their identity in stage keys
  (``pate.data.data_identity(cfg.data.name, cfg.data.image_size, arrays)``), ``plain`` turning a config node into
  plain Python;
* ``features_stage(cfg, data, extractor)``, ``queries_stage(cfg, data)``: the public features and the public
  queries as stages, which ``ArtifactStore(cache_dir).get(stage)`` builds or reads from the cache;
* ``trainer_settings(cfg)``, ``head_teacher_settings(cfg.teacher)``, ``network_teacher_settings(cfg.teacher)``:
  the config as the settings that ``teachers`` takes;
* ``majority_class_accuracy(labels)``: the majority-class floor a run reports beside its student.
"""

from omegaconf import OmegaConf

import pate.pipeline.schemas  # noqa: F401  (registers the method schemas that conf/method extends, before a compose)
from pate.lazy import lazy_names

# ${people_dir:N}: the synthetic set's directory suffix for N images per person (conf/data/synthetic.yaml): none for
# one image per person, so that set keeps the directory it had before people existed
OmegaConf.register_new_resolver("people_dir", lambda n: "" if int(n) == 1 else f"_people{int(n)}", replace=True)

# name -> the module that defines it, imported on first use: the command line's --help and its config checks need
# none of torch or Lightning, which the runner imports (seconds)
_HOMES = {
    "ArtifactStore": "pate.artifacts",
    "majority_class_accuracy": "pate.evaluation",
    "instantiate": "pate.pipeline.checks",
    "Dataset": "pate.pipeline.graph",
    "features_stage": "pate.pipeline.graph",
    "plain": "pate.pipeline.graph",
    "queries_stage": "pate.pipeline.graph",
    "run": "pate.pipeline.runner",
    "set_num_labels": "pate.pipeline.runner",
    "summary": "pate.pipeline.runner",
    "head_teacher_settings": "pate.pipeline.settings",
    "network_teacher_settings": "pate.pipeline.settings",
    "trainer_settings": "pate.pipeline.settings",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "ArtifactStore",
    "Dataset",
    "features_stage",
    "head_teacher_settings",
    "instantiate",
    "majority_class_accuracy",
    "network_teacher_settings",
    "plain",
    "queries_stage",
    "run",
    "set_num_labels",
    "summary",
    "trainer_settings",
]
