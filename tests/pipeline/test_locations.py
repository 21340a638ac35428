"""Where a run writes is checked before anything is written there (pate/pipeline/paths.py): a directory setting that
is a file or a link to nothing, and a task_name that is not a plain name, are refused naming the key and the value.
The command lines of these cases are in tests/pipeline/test_cli_errors.py."""

import pytest
from omegaconf import OmegaConf

from pate.pipeline.checks import UserError
from pate.pipeline.paths import check_directory, check_locations


def test_a_directory_that_exists_or_can_be_created_passes(tmp_path):
    check_directory("paths.cache_dir", tmp_path)
    check_directory("paths.cache_dir", tmp_path / "not" / "yet")
    (tmp_path / "link").symlink_to(tmp_path)
    check_directory("paths.cache_dir", tmp_path / "link" / "cache")


def test_a_file_or_a_dangling_link_on_the_way_is_refused(tmp_path):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "gone").symlink_to(tmp_path / "cleaned")
    with pytest.raises(UserError, match=r"hydra.run.dir='.*a_file': it is a file; expected a directory"):
        check_directory("hydra.run.dir", tmp_path / "a_file")
    with pytest.raises(UserError, match=r"a_file/sub'.*a_file is a file"):
        check_directory("hydra.run.dir", tmp_path / "a_file" / "sub")
    with pytest.raises(UserError, match="it is a symbolic link that does not resolve"):
        check_directory("paths.cache_dir", tmp_path / "gone")


@pytest.mark.parametrize("name", ["..", "../x", "a/b", ".", "", " train", "a\\b"])
def test_a_task_name_that_is_not_a_plain_name_is_refused(name, tmp_path):
    cfg = OmegaConf.create({"task_name": name, "paths": {"cache_dir": str(tmp_path)}})
    with pytest.raises(UserError, match=r"task_name=.*expected a plain name"):
        check_locations(cfg)


def test_a_plain_task_name_passes(tmp_path):
    check_locations(OmegaConf.create({"task_name": "train.v2", "paths": {"cache_dir": str(tmp_path)}}))
