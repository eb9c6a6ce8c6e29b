"""posenc_cli.encodings.relative and posenc relative: T5 buckets, DeBERTa log buckets, Shaw clipping.

Two independent references here: the definitions evaluated entry by entry in mpmath at 50 digits (no shared code
with the step-function construction the module uses) and the 10 x 10 matrix printed in ml-explore/mlx-examples
PR #113; the goldens transformers itself made are in ``test_relative_goldens.py``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.encodings import relative as rel
from posenc_cli.errors import SpecError

mpmath.mp.dps = 50


def t5_reference(r: int, buckets: int, max_distance: int, causal: bool) -> int:
    """HF's _relative_position_bucket of one relative position, read as real-number arithmetic."""
    out, n = 0, buckets
    if not causal:
        n //= 2
        out += n if r > 0 else 0
        a = abs(r)
    else:
        a = max(-r, 0)
    e = n // 2
    if a < e:
        return out + a
    value = mpmath.floor(mpmath.log(mpmath.mpf(a) / e) / mpmath.log(mpmath.mpf(max_distance) / e) * (n - e))
    return out + min(e + int(value), n - 1)


def deberta_reference(r: int, buckets: int, max_distance: int) -> int:
    m = buckets // 2
    a = m - 1 if -m < r < m else abs(r)
    if a <= m:
        return r
    log = mpmath.ceil(mpmath.log(mpmath.mpf(a) / m) / mpmath.log(mpmath.mpf(max_distance - 1) / m) * (m - 1))
    return (1 if r > 0 else -1) * (m + int(log))


SETTINGS = [(32, 128), (8, 20), (16, 64), (64, 256), (128, 128), (256, 1024), (6, 7), (4, 3), (2, 2)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("buckets", "max_distance"), SETTINGS)
def test_t5_buckets_are_the_exact_formula(buckets, max_distance, causal):
    e = (buckets if causal else buckets // 2) // 2
    if max_distance <= e or (not causal and buckets < 4):
        with pytest.raises(SpecError):
            rel.t5_index(1, 1, buckets=buckets, max_distance=max_distance, causal=causal)
        return
    span = 3 * max_distance
    index = rel.t5_index(1, 2 * span + 1, buckets=buckets, max_distance=max_distance, causal=causal, offset=span)
    got = index[0].tolist()  # r = k - q runs from -span to span
    want = [t5_reference(r, buckets, max_distance, causal) for r in range(-span, span + 1)]
    assert got == want


def test_t5_matches_the_matrix_printed_in_mlx_examples_113():
    index = rel.t5_index(10, 10)
    assert index[0].tolist() == [0, 17, 18, 19, 20, 21, 22, 23, 24, 24]
    assert index[-1].tolist() == [8, 8, 7, 6, 5, 4, 3, 2, 1, 0]


@pytest.mark.parametrize(("buckets", "max_distance"), [(256, 512), (256, 1024), (128, 512), (64, 256), (8, 10)])
def test_deberta_buckets_are_the_exact_formula(buckets, max_distance):
    r = np.arange(-3000, 3001)
    got = rel.deberta_buckets(r, buckets, max_distance).tolist()
    want = [deberta_reference(int(x), buckets, max_distance) for x in r]
    assert got == want


def test_deberta_sample_from_the_reference_notes():
    r = np.array([-600, -511, -129, -128, -1, 0, 1, 128, 129, 511, 600])
    assert rel.deberta_buckets(r, 256, 512).tolist() == [-270, -255, -129, -128, -1, 0, 1, 128, 129, 255, 270]


def test_deberta_without_buckets_is_q_minus_k():
    q, k = np.meshgrid(np.arange(3, 10), np.arange(13), indexing="ij")
    assert (rel.deberta_index(7, 13, offset=3) == q - k).all()


@pytest.mark.parametrize(("q", "k", "m", "offset"), [(5, 5, 2, 0), (3, 9, 4, 6), (9, 3, 1, 0), (1, 50, 16, 49)])
def test_shaw_is_the_clipped_distance(q, k, m, offset):
    got = rel.shaw_index(q, k, max_distance=m, offset=offset)
    want = [[min(max(j - (i + offset), -m), m) + m for j in range(k)] for i in range(q)]
    assert got.tolist() == want


def test_shaw_queries_default_to_the_last_positions_as_tensor2tensor():
    table = api.relative("shaw", 3, 8, max_distance=2)
    assert table.params["offset"] == 5
    assert table.arrays["index"].tolist()[-1] == [0] * 5 + [0, 1, 2]
    with pytest.raises(SpecError, match="more queries than keys"):
        api.relative("shaw", 8, 3, max_distance=2)


def test_index_dtype_is_the_smallest_that_holds_it_or_as_asked():
    assert api.relative("t5", 4).arrays["index"].dtype == np.int8
    assert api.relative("t5", 4, buckets=256, max_distance=512).arrays["index"].dtype == np.int16
    assert api.relative("deberta", 5).arrays["index"].dtype == np.int8
    assert api.relative("t5", 4, dtype="int32").arrays["index"].dtype == np.int32
    with pytest.raises(SpecError, match="int8 cannot hold"):
        api.relative("t5", 4, buckets=512, max_distance=1024, dtype="int8")


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"scheme": "t6", "query_length": 4}, "scheme"),
        ({"scheme": "t5", "query_length": 0}, "query_length"),
        ({"scheme": "t5", "query_length": 4, "key_length": -1}, "key_length"),
        ({"scheme": "t5", "query_length": 4, "offset": -1}, "offset"),
        ({"scheme": "t5", "query_length": 4, "buckets": 32, "max_distance": 8}, "max_distance"),
        ({"scheme": "deberta", "query_length": 4, "causal": True}, "causal"),
        ({"scheme": "deberta", "query_length": 4, "buckets": 256}, "max_distance"),
        ({"scheme": "deberta", "query_length": 4, "buckets": 256, "max_distance": 129}, "max_distance"),
        ({"scheme": "shaw", "query_length": 4}, "max_distance"),
        ({"scheme": "shaw", "query_length": 4, "max_distance": 2, "buckets": 3}, "buckets"),
        ({"scheme": "t5", "query_length": 4, "key": "w"}, "key"),
        ({"scheme": "t5", "query_length": 4, "dtype": "float32"}, "dtype"),
    ],
)
def test_bad_settings_name_the_parameter(kwargs, param):
    with pytest.raises(SpecError) as info:
        api.relative(**kwargs)
    assert info.value.param == param
