"""Every bad input a user can give train.py -- a config value or a data file -- ends as a short error: exit
status 2, a message naming the key or the file, at most 3 lines of output, no traceback, and no teacher
trained. Every case runs train.py's command line in this process (``tests.cli.run_cli``: the script's own
``cli()``, Hydra's parsing and the run's error path); a sample of them also through a fresh interpreter, as do
the stop signals, which need a process of their own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pate.data.synthetic import generate_synthetic_celeba
from pate.pipeline.cli import STOP_SIGNALS, command_line_errors
from tests.cli import Completed, run_cli

pytestmark = pytest.mark.slow  # command lines, end-to-end runs or heavy computations: not in the fast loop

ROOT = Path(__file__).resolve().parents[2]

CONFIG_CASES = [
    (["privacy.delta=0"], "privacy.delta=0"),
    (["privacy.delta=1.5"], "privacy.delta=1.5"),
    (["privacy.target_epsilon=-1"], "privacy.target_epsilon=-1"),
    (["privacy.neighbors=foo"], "privacy.neighbors='foo'"),
    (["privacy.budget_epsilon=-1"], "privacy.budget_epsilon=-1"),
    (["privacy.budget_epsilon=0.001"], "privacy.budget_epsilon=0.001 cannot pay for one query"),
    (["aggregator=gaussian_pate", "privacy.target_epsilon=null", "aggregator.sigma=0"], "aggregator.sigma"),
    (["aggregator=tau_pate", "aggregator.tau=0"], "aggregator.tau"),
    (
        ["aggregator=binary_voting_dd", "privacy.budget_epsilon=3"],
        "privacy.budget_epsilon=3: DataDependentBinaryVoting",
    ),
    (["aggregator=confident_binary_voting", "aggregator.screen_threshold=0.3"], "screen_threshold=0.3"),
    (["aggregator=binary_voting_dd", "privacy.target_epsilon=null"], "has no proposal yet"),
    (["aggregator=tau_pate", "aggregator.norm=l3"], "aggregator.norm"),
    (["aggregator=stable_topk_paper", "aggregator.delta_t=2"], "aggregator.delta_t"),
    (["partition.num_teachers=100000"], "partition.num_teachers=100000"),
    (["partition.num_teachers=200"], "each teacher needs at least 2 records: teacher=heads"),  # 320 records
    (["data.image_size=4"], "data.image_size=4 is smaller than the extractor's patch=5"),
    (["privacy.target_epsilon=1e308"], "target_epsilon=1e+308 at delta=1e-06 over count=40 queries is beyond"),
    (["data.num_queries=100000"], "data.num_queries=100000"),
    (["data.num_queries=0"], "data.num_queries=0"),
    (["seed=-1"], "seed=-1"),
    (["data.pool_fraction=0"], "data.pool_fraction=0"),
    (["features.num_fit_images=0"], "features.num_fit_images=0"),
    (["student.semi.method=fixmatch"], "student.semi.method='fixmatch'"),
    (["verbose=maybe"], "verbose='maybe'"),
    (["debug=tiny_cnn", "teacher.max_epochs=0"], "teacher.max_epochs"),
    (["debug=tiny_cnn", "student.batch_size=0"], "student.batch_size"),
    (["debug=tiny_cnn", "teacher.optimizer.lr=-1"], "teacher.optimizer.lr"),
    (["debug=tiny_cnn", "trainer.precision=foo"], "trainer.precision='foo'"),
    (["debug=tiny_cnn", "trainer.accelerator=gpu"], "trainer.accelerator='gpu'"),
    (["trainer=gpu"], "trainer.accelerator='gpu' but torch sees no CUDA device"),  # heads: the features' device
    (
        ["debug=tiny_cnn", "teacher=resnet18", "teacher.model.width=null", "teacher.model.norm=frozen"],
        "norm='frozen' keeps the pretrained BatchNorm statistics",
    ),
    (["debug=tiny_cnn", "teacher=resnet18", "teacher.model.depth=19"], "teacher.model.depth"),
    (["debug=tiny_cnn", "teacher.model._target_=teachers.training.models.NoSuchNet"], "teacher.model"),
    (["privacy.target_epsilon=0.001", "aggregator=stable_topk_paper"], "target_epsilon=0.001"),
    (["teacher.lambdas=[0.1,-1]"], "lambdas"),
    (["teacher.chunk_size=0"], "teacher.chunk_size"),
    # what Hydra finds while it composes: one line too (pate.pipeline.cli.composition_error), not Hydra's several
    (["method=dp_sgd", "method.epochz=3"], "Key 'epochz' not in 'DPSGDConfig' (key: method.epochz)"),
    (["method=dp_sgd", "method.epochs=abc"], "could not be converted to Integer (key: method.epochs)"),
    (["teacher.lambdaz=[1.0]"], "Could not override 'teacher.lambdaz'"),
    (["method=dpsgd"], "Could not find 'method/dpsgd' Available options in 'method': dp_sgd, pate, private_knn"),
    (["method.epochs=["], "method.epochs=[: no viable alternative at input '['"),
    (["features.extractor.num_filters=0"], "features.extractor.num_filters"),
    (["partition.seed=1.5"], "partition.seed=1.5"),
    (["debug=tiny_cnn", "teacher.ensemble_size=0"], "teacher.ensemble_size=0"),
    (["debug=tiny_cnn", "teacher.model.norm=layer"], "teacher.model.norm"),
    (
        ["teacher=resnet18_imagenet"],
        "teacher.model.weights_path",
    ),  # TORCH_HOME is empty: the weights are not there, and runs never download
]


def _run(args: list[str], root: Path) -> Completed:
    """``python train.py <args>`` from ``root``, in this process, with the run's files under ``root``."""
    return run_cli(
        "train.py",
        [*args, f"paths.root_dir={root}", f"hydra.run.dir={root / 'run'}"],
        cwd=root,
        env={"TORCH_HOME": str(root / "torch_home")},
    )  # no pretrained weights, whatever this machine has


def _run_real(args: list[str], root: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The same through a fresh interpreter."""
    cmd = [sys.executable, str(ROOT / "train.py"), *args, f"paths.root_dir={root}", f"hydra.run.dir={root / 'run'}"]
    env = {**os.environ, "TORCH_HOME": str(root / "torch_home")}
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout, env=env)


def _assert_short_error(done: Completed | subprocess.CompletedProcess, names: str, root: Path) -> None:
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert lines[-1].startswith("error: ") and names in lines[-1], lines[-1]
    assert len(lines) <= 3 and "Traceback" not in done.stderr, lines
    assert not list(root.rglob("teacher_*.pt")) and not list((root / "cache").glob("teachers/*")), (
        "a teacher was trained"
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory, shared_root) -> Path:
    """A run root whose tiny synthetic set is the session's (copied), so no case pays for its generation."""
    root = tmp_path_factory.mktemp("cli")
    generate_synthetic_celeba(
        root / "data" / "synthetic_celeba_n400_px32_seed0",
        num_images=400,
        image_size=32,
        split_fractions=(0.8, 0.05, 0.15),
        seed=0,
        progress=False,
    )
    return root


# One case also runs through a fresh interpreter (what run_cli cannot show: the script's own start-up).
COMMAND_LINE_SAMPLE = ("privacy.delta=0",)


def _with_debug(args: list[str]) -> list[str]:
    return args if any(a.startswith("debug=") for a in args) else ["debug=tiny", *args]


@pytest.mark.parametrize("args, names", CONFIG_CASES, ids=[" ".join(a) for a, _ in CONFIG_CASES])
def test_a_bad_config_value_is_one_line_naming_the_key(args, names, root):
    """Exit 2 and one line on stderr naming the key, before any teacher."""
    done = _run(_with_debug(args), root)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], lines
    assert not list(root.rglob("teacher_*.pt")) and not list((root / "cache").glob("teachers/*"))


@pytest.mark.parametrize(
    "args, names",
    [case for case in CONFIG_CASES if case[1] in COMMAND_LINE_SAMPLE],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_a_bad_config_value_through_a_fresh_interpreter(args, names, root):
    _assert_short_error(_run_real(_with_debug(args), root), names, root)


def _celeba(tmp_path: Path, source: Path) -> Path:
    """A CelebA directory (a copy of the tiny synthetic set, which has CelebA's layout)."""
    celeba = tmp_path / "celeba"
    shutil.copytree(source, celeba, ignore=shutil.ignore_patterns(".*"))
    return celeba


def _truncate_image(celeba: Path) -> str:
    image = celeba / "img_align_celeba" / "000123.jpg"
    image.write_bytes(image.read_bytes()[:200])
    return str(image)


def _binary_partition(celeba: Path) -> str:
    path = celeba / "list_eval_partition.txt"
    text = path.read_bytes().split(b"\n")
    text[4] = b"\x89PNG\x00\xff"
    path.write_bytes(b"\n".join(text))
    return f"{path}, line 5"


def _no_test_split(celeba: Path) -> str:
    path = celeba / "list_eval_partition.txt"
    path.write_text(path.read_text().replace(" 2\n", " 0\n"))
    return "the test split is empty"


def _missing_attributes(celeba: Path) -> str:
    (celeba / "list_attr_celeba.txt").unlink()
    return "list_attr_celeba.txt"


@pytest.mark.parametrize(
    "damage",
    [_truncate_image, _binary_partition, _no_test_split, _missing_attributes],
    ids=lambda f: f.__name__.strip("_"),
)
def test_bad_celeba_data_is_one_line_naming_the_file(damage, root, tmp_path):
    celeba = _celeba(tmp_path, root / "data" / "synthetic_celeba_n400_px32_seed0")
    names = damage(celeba)
    _assert_short_error(_run(["debug=tiny", "data=celeba", f"data.root={celeba}"], tmp_path), names, tmp_path)


def test_the_default_data_choice_of_debug_tiny_gives_way_to_celeba(root, tmp_path):
    """debug=tiny with data=celeba runs the toy settings on CelebA's files (here: the same tiny images)."""
    celeba = _celeba(tmp_path, root / "data" / "synthetic_celeba_n400_px32_seed0")
    done = _run(["debug=tiny", "data=celeba", f"data.root={celeba}"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "student           accuracy" in done.stdout + done.stderr


def test_a_stop_signal_says_what_was_saved_and_how_to_resume(root, tmp_path):
    """A signal while the CNN teachers train (inside a Lightning fit): exit 128 + its number, one message naming
    the signal and the cache, no traceback and no metrics.json. The two signals Lightning handles itself: SIGTERM
    (SLURM's time limit, scancel, docker stop), which Lightning alone ends with a SystemExit that reads as success,
    and SIGINT, which it catches as a KeyboardInterrupt. Each stops a run of its own; the two run at once. SIGHUP,
    which Lightning leaves alone, is checked without a process by the test below."""
    procs = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        run_root = tmp_path / signum.name
        shutil.copytree(root / "data", run_root / "data")  # a cache of its own: no other run's teachers in it
        cmd = [
            sys.executable,
            str(ROOT / "train.py"),
            "debug=tiny_cnn",
            "teacher.max_epochs=200",
            f"seed={90 + signum}",
            f"paths.root_dir={run_root}",
            f"hydra.run.dir={run_root / 'run'}",
        ]
        procs[signum] = (
            run_root,
            subprocess.Popen(
                cmd,
                cwd=run_root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            ),
        )
    deadline = time.monotonic() + 180
    waiting = dict(procs)
    while waiting and time.monotonic() < deadline:
        for signum, (run_root, proc) in list(waiting.items()):
            if list((run_root / "cache").glob("teachers/*.partial")):
                time.sleep(1.0)
                proc.send_signal(signum)
                del waiting[signum]
        time.sleep(0.2)
    for signum, (run_root, proc) in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signum, (signum.name, err[-2000:])
        assert f"interrupted: {signum.name} received" in err and "run the same command again to resume" in err
        assert str(run_root / "cache") in err and "Traceback" not in err
        assert not (run_root / "run" / "metrics.json").exists()


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda signum: signal.Signals(signum).name)
def test_each_stop_signal_ends_the_run_as_an_interruption_naming_the_cache(signum, capsys, tmp_path):
    """The handler itself, for every stop signal, delivered to this process while the body runs: exit 128 + the
    signal's number and one line naming the signal and the cache; the handlers before it are restored."""
    before = {stop: signal.getsignal(stop) for stop in STOP_SIGNALS}
    cfg = OmegaConf.create({"paths": {"cache_dir": str(tmp_path)}})
    with pytest.raises(SystemExit) as stop, command_line_errors(cfg):
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler raises before this ends
    assert stop.value.code == 128 + signum
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"interrupted: {signal.Signals(signum).name} received") and str(tmp_path) in line
    assert "run the same command again to resume" in line and "\n" not in line
    assert {stop: signal.getsignal(stop) for stop in STOP_SIGNALS} == before


def test_help_lists_the_groups_train_py_accepts(root):
    done = run_cli("train.py", ["--help"], cwd=root)
    assert done.returncode == 0
    assert (
        "aggregator: binary_voting, binary_voting_dd, confident_binary_voting, gaussian_pate, stable_topk_gumbel, "
        "stable_topk_paper, tau_pate"
    ) in done.stdout
    assert "student: head, resnet18, small_cnn" in done.stdout
    assert "topk_experiment" not in done.stdout  # topk.py's group: train.py rejects it


def test_topk_help_lists_its_own_groups_only(root):
    done = run_cli("topk.py", ["--help"], cwd=root)
    assert done.returncode == 0
    assert "topk_experiment: checkin, flat, repeated" in done.stdout
    assert "aggregator:" not in done.stdout and "teacher:" not in done.stdout  # train.py's groups


def test_a_key_appended_with_a_typo_is_refused_not_ignored(root):
    """Hydra accepts ``+privacy.target_epsilonn=3``; the run refuses it and names the key it probably meant. A key
    appended to a node with a ``_target_`` (a constructor argument) stays allowed: its class checks it."""
    done = _run(["debug=tiny", "+privacy.target_epsilonn=3"], root)
    _assert_short_error(done, "did you mean privacy.target_epsilon", root)


def test_split_sizes_are_checked_before_any_image_is_decoded(root, tmp_path):
    """partition.num_teachers larger than the training split fails on the text files alone: no tensor cache."""
    celeba = _celeba(tmp_path, root / "data" / "synthetic_celeba_n400_px32_seed0")
    done = _run(["debug=tiny", "data=celeba", f"data.root={celeba}", "partition.num_teachers=100000"], tmp_path)
    _assert_short_error(done, "partition.num_teachers=100000", tmp_path)
    assert not list((tmp_path / "cache").glob("tensors/*.npy")), "images were decoded before the check"


def _where_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    """Places a run cannot write to, made under ``tmp_path``: (extra arguments, what the one line names)."""
    (tmp_path / "a_file").write_text("not a directory")
    (tmp_path / "gone").symlink_to(tmp_path / "cleaned_scratch")
    return [
        ([f"hydra.run.dir={tmp_path / 'a_file'}"], "hydra.run.dir="),
        (["-m", f"hydra.sweep.dir={tmp_path / 'a_file' / 'sweep'}", "seed=1,2"], "hydra.sweep.dir="),
        ([f"paths.cache_dir={tmp_path / 'gone'}", f"hydra.run.dir={tmp_path / 'run'}"], "paths.cache_dir="),
        (["task_name=../../outside"], "task_name='../../outside'"),
    ]


@pytest.mark.parametrize(
    "case", range(4), ids=["run dir a file", "sweep dir under a file", "cache a dangling link", "task_name with .."]
)
def test_where_a_run_writes_is_one_line_before_anything_is_created(case, root, tmp_path):
    """Hydra creates the run and sweep directories before train.py's code runs: a file there, a cache linked to
    nothing or a task_name that leaves PROJECT_ROOT is one line and exit 2, and nothing is written anywhere."""
    args, names = _where_cases(tmp_path)[case]
    before = sorted(tmp_path.rglob("*"))
    flags = [arg for arg in args if arg == "-m"]  # Hydra's flags come before the overrides
    overrides = [arg for arg in args if arg != "-m"]
    done = run_cli(
        "train.py",
        [*flags, "debug=tiny", f"paths.root_dir={root}", *overrides],
        cwd=tmp_path,
        env={"PROJECT_ROOT": str(tmp_path / "project")},
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], lines
    assert sorted(tmp_path.rglob("*")) == before and not (root.parent / "outside").exists()


def test_help_imports_neither_torch_nor_lightning():
    """`python train.py --help` composes the config and prints the groups: it needs none of torch or Lightning, whose
    import took most of its 21 s (the runner imports them for a run)."""
    code = (
        "import runpy, sys\nsys.argv = ['train.py', '--help']\ntry:\n    runpy.run_path('train.py', "
        "run_name='__main__')\nexcept SystemExit:\n    pass\nprint(sorted(m for m in ('torch', 'pytorch_lightning', "
        "'lightning') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "train.py" in done.stdout and done.stdout.strip().splitlines()[-1] == "[]"


def test_a_run_of_ridge_heads_and_the_kept_models_reader_import_neither_lightning_nor_torchvision():
    """The pipeline and ``pate.predict`` import Lightning where a network trains and torchvision where a ResNet is
    built: a run of the default ridge heads, and reading a kept head, pay for neither at start-up."""
    code = (
        "import sys\nimport pate.pipeline.runner, pate.predict\n"
        "print(sorted(m for m in ('pytorch_lightning', 'lightning', 'torchmetrics', 'torchvision') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
