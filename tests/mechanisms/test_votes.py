"""pate.votes: packing contract with the vote stage, counting, and validation of vote counts."""

import numpy as np
import pytest
import torch

from pate.votes import (
    PackedVotes,
    check_vote_bits,
    check_vote_counts,
    count_votes,
    pack_votes,
    packed_width,
    unpack_votes,
)


@pytest.mark.parametrize("num_labels", [1, 7, 8, 9, 40])
def test_pack_unpack_round_trip_and_layout(num_labels):
    rng = np.random.default_rng(num_labels)
    bits = rng.random((3, 5, num_labels)) < 0.5
    packed = pack_votes(bits)
    assert packed.dtype == np.uint8 and packed.shape == (3, 5, packed_width(num_labels))
    np.testing.assert_array_equal(packed, np.packbits(bits, axis=-1))  # the stored format
    np.testing.assert_array_equal(unpack_votes(packed, num_labels), bits)
    assert unpack_votes(packed, num_labels).dtype == np.bool_


def test_big_bit_order_puts_the_first_label_in_the_most_significant_bit():
    bits = np.zeros((1, 1, 9), dtype=bool)
    bits[0, 0, 0] = bits[0, 0, 8] = True
    np.testing.assert_array_equal(pack_votes(bits)[0, 0], [0b10000000, 0b10000000])


def test_count_votes_from_bits_packed_bytes_and_packed_votes_agree():
    rng = np.random.default_rng(0)
    bits = rng.random((4, 11, 13)) < 0.3
    expected = bits.sum(axis=1)
    for counts in (count_votes(bits), count_votes(pack_votes(bits), 13), count_votes(PackedVotes.from_bits(bits))):
        assert counts.dtype == np.int32
        np.testing.assert_array_equal(counts, expected)
    np.testing.assert_array_equal(PackedVotes.from_bits(bits).unpack(), bits)
    assert PackedVotes.from_bits(bits).shape == (4, 11, 13)


def test_unpack_refuses_padding_bits_wrong_width_and_dtype():
    packed = pack_votes(np.ones((2, 3, 5), dtype=bool))
    corrupted = packed.copy()
    corrupted[0, 0, 0] |= 1  # a padding bit (labels 5..7 do not exist)
    with pytest.raises(ValueError, match="padding bits"):
        unpack_votes(corrupted, 5)
    with pytest.raises(ValueError, match="packed must have last axis"):
        unpack_votes(packed, 9)
    with pytest.raises(ValueError, match="uint8"):
        unpack_votes(packed.astype(np.int16), 5)
    with pytest.raises(ValueError, match="num_labels"):
        PackedVotes(packed, 0)
    with pytest.raises(ValueError, match="bits must be uint8"):
        PackedVotes(packed[0], 5)


def test_vote_bits_must_be_zero_or_one():
    np.testing.assert_array_equal(check_vote_bits(np.array([[0, 1]])), [[False, True]])
    with pytest.raises(ValueError, match=r"votes must hold only 0/1 votes, got value 2"):
        check_vote_bits(np.array([[0, 2]]))
    with pytest.raises(ValueError, match="dtype"):
        check_vote_bits(np.array([["a"]]))


def test_check_vote_counts_accepts_integers_whole_floats_and_torch():
    counts = np.array([[0, 3, 5]])
    for votes in (counts, counts.astype(np.int64), counts.astype(np.float64), torch.tensor(counts)):
        checked = check_vote_counts(votes, 3, 5)
        assert checked.dtype == np.int32
        np.testing.assert_array_equal(checked, counts)


@pytest.mark.parametrize(
    "votes, match",
    [
        (np.array([[0, -1, 2]]), r"votes must be counts >= 0, got negative value -1 at index \(0, 1\)"),
        (np.array([[0, 6, 2]]), r"votes must be counts <= num_teachers=5, got value 6 at index \(0, 1\)"),
        (np.array([[0, 1.5, 2]]), r"votes must be whole-number counts, got fractional value 1.5"),
        (np.array([[0, np.nan, 2]]), r"votes must be whole-number counts, got fractional value nan"),
        (np.array([0, 1, 2]), r"votes must be vote counts of shape \[queries, num_labels=3\], got shape \(3,\)"),
        (np.zeros((2, 4), dtype=int), r"got shape \(2, 4\)"),
        (np.zeros((2, 5, 3), dtype=int), r"got shape \(2, 5, 3\)"),
        (np.zeros((2, 3), dtype=bool), r"votes must be integer vote counts, got dtype bool"),
        (np.array([["a", "b", "c"]]), r"votes must be integer vote counts, got dtype <U1"),
    ],
)
def test_check_vote_counts_refuses_bad_votes(votes, match):
    with pytest.raises(ValueError, match=match):
        check_vote_counts(votes, 3, 5)
