"""Load the model a run kept and label images with it (run from the repository:
``python examples/label_images.py [RUN_DIR]``).

Without RUN_DIR it first trains a tiny run (``python train.py debug=tiny``, seconds) in a temporary directory. The
model comes back from ``RUN_DIR/model``: the student's weights, what the public extractor learned, and how to feed
them. The run's evaluation images (``RUN_DIR/evaluation.csv``) are decoded as the run decoded its data, labelled,
and scored against their labels: the accuracy is the run's own ``student_accuracy``. ``pate-predict`` does the same
from the command line.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from pate.predict import gather_inputs, load_model, read_image

if len(sys.argv) > 1:
    run_dir = Path(sys.argv[1])
else:
    root = Path(tempfile.mkdtemp(prefix="pate-example-"))
    run_dir = root / "run"
    train = [sys.executable, "train.py", "debug=tiny", "progress=false", f"paths.root_dir={root}"]
    subprocess.run([*train, f"hydra.run.dir={run_dir}"], check=True, capture_output=True)

model = load_model(run_dir)
files, truth = gather_inputs([str(run_dir / "evaluation.csv")], model.label_names)
images = np.stack([read_image(file, model.image_size, resize=True) for file in files])  # uint8 [N, 3, S, S]
predicted = (model.probabilities(images) > 0.5).numpy()

accuracy = float((predicted == truth).mean(axis=0).mean())  # the mean over labels of each label's accuracy
recorded = json.loads((run_dir / "metrics.json").read_text())["student_accuracy"]
same = "equals" if f"{accuracy:.4f}" == f"{recorded:.4f}" else "DIFFERS FROM"
print(f"labelled {len(files)} images with {model.spec['network']['_target_']}: accuracy {accuracy:.4f}")
print(f"this {same} the run's student_accuracy, {recorded:.4f}")
print(f"{files[0].name}: {', '.join(np.array(model.label_names)[predicted[0]]) or 'no label present'}")
covered = model.spec["covered_by"]
caveat = "" if covered["secret_noise"] else " -- NOT a guarantee here: the noise was seeded, so it can be replayed"
print(f"covered by: {covered['privacy']}{caveat}")
print(f"publishable: {model.spec['publishable']}")
