"""CelebA's layouts: one record is one file. The partition file matches names as strings, so every name of the
attribute file is resolved (normalised, links followed) before any decode: two names of one file, or a name leading
outside data.root, are refused."""

import os
import re
import shutil

import pytest

from pate.data.celeba import load_celeba
from tests.data.test_celeba import _rows, count_decodes, fake_celeba, write_attr_file  # noqa: F401 (fixtures)


def _list_again(root, name, code=2):
    """Append a 7th image ``name`` (a spelling or link of another), in split ``code``, to both lists."""
    rows = _rows(root)
    write_attr_file(root, [*rows, (name, rows[0][1])])
    with open(root / "list_eval_partition.txt", "a") as handle:
        handle.write(f"{name} {code}\n")


def _spelling(root, kind):
    """A name for 000001.jpg (a training image) other than its own."""
    images = root / "img_align_celeba"
    if kind == "symlink":
        os.symlink("000001.jpg", images / "link.jpg")
        return "link.jpg"
    if kind == "hard_link":
        os.link(images / "000001.jpg", images / "hard.jpg")
        return "hard.jpg"
    return {"dot": "./000001.jpg", "double_slash": ".//000001.jpg", "up_and_back": "../img_align_celeba/000001.jpg"}[
        kind
    ]


@pytest.mark.parametrize("kind", ["dot", "double_slash", "up_and_back", "symlink", "hard_link"])
def test_no_spelling_or_link_lists_one_celeba_image_in_two_splits(fake_celeba, tmp_path, kind, count_decodes):
    """The partition file matches names as strings, so two spellings of 000001.jpg could be train and test at
    once: the attribute file's names are resolved first, and the second is refused naming both lines."""
    name = _spelling(fake_celeba, kind)
    _list_again(fake_celeba, name)
    same = "hard links to one file" if kind == "hard_link" else "one file"
    with pytest.raises(
        ValueError,
        match=rf"list_attr_celeba\.txt, lines 3 and 9: '000001\.jpg' and "
        rf"{re.escape(repr(name))} are {same}",
    ):
        load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert count_decodes == []


@pytest.mark.parametrize("kind", ["symlink", "dot_dot"])
def test_a_celeba_image_outside_the_root_is_refused(fake_celeba, tmp_path, kind, count_decodes):
    outside = tmp_path / "outside.jpg"
    shutil.copy(fake_celeba / "img_align_celeba" / "000002.jpg", outside)
    name = "../../outside.jpg"
    if kind == "symlink":
        os.symlink(outside, fake_celeba / "img_align_celeba" / "elsewhere.jpg")
        name = "elsewhere.jpg"
    _list_again(fake_celeba, name)
    with pytest.raises(
        ValueError,
        match=rf"list_attr_celeba\.txt, line 9: {re.escape(repr(name))} leads to "
        rf"{re.escape(str(outside))}, outside data\.root=",
    ):
        load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert count_decodes == []
