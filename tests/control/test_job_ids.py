"""Job ids: a letter, then 7 letters or digits, drawn at random."""
from __future__ import annotations

import re

from nbrunner.control.submit import ID_ALPHABET, new_id


def test_ids_have_the_documented_shape_and_use_the_whole_alphabet():
    ids = [new_id() for _ in range(3000)]
    assert all(re.fullmatch(r"[a-z][a-z0-9]{7}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert {i[0] for i in ids} == set("abcdefghijklmnopqrstuvwxyz")
    assert all({i[k] for i in ids} == set(ID_ALPHABET) for k in range(1, 8))
