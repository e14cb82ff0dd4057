"""detect_period against the algorithm it replaced (tests/reference_algorithms.py).

detect_period measures the runs of only the periods whose bound on coverage can still
matter, and compares tokens in the smallest integer type that holds them; the period
it returns must be the reference's exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memtune.trace.plan import detect_period, step_tokens, tokenize
from heldout_runs import heldout, load_recording
from reference_algorithms import reference_detect_period

REPO = Path(__file__).resolve().parents[2]
#: the held-out traces whose tokens the reference goes through in a few seconds (not a set
#: kept unseen in a directory of its own); the larger ones (ppo-train, ssm-train, ...) were compared once by hand
HELDOUT = [p for p in sorted((REPO / "benchmarks" / "heldout").glob("*.jsonl.gz"))
           if p.stat().st_size < 250_000]


def _same(tokens, **kw) -> None:
    try:
        want = reference_detect_period(tokens, **kw)
    except Exception as e:  # noqa: BLE001 (the same error, then)
        with pytest.raises(type(e)):
            detect_period(tokens, **kw)
        return
    assert detect_period(tokens, **kw) == want


ALPHABETS = [(0, 1), (0, 1, 2, 3, 4, 5), (-3, 7, 120, 40_000, -(2**40), 2**62)]  # the last: past int8/16/32


@st.composite
def token_lists(draw) -> list[int]:
    alphabet = draw(st.sampled_from(ALPHABETS))
    sym = st.sampled_from(alphabet)
    unit = draw(st.lists(sym, min_size=1, max_size=15))
    reps = draw(st.integers(0, 8))
    tokens = draw(st.lists(sym, max_size=20)) + unit * reps + draw(st.lists(sym, max_size=20))
    for _ in range(draw(st.integers(0, 3))):  # a few changed tokens inside the repetitions
        if tokens:
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(sym)
    return tokens


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(token_lists(), st.integers(0, 6), st.one_of(st.none(), st.integers(-1, 40)),
       st.sampled_from([-1, 0, 1, 2, 2, 2, 3, 4]))
def test_detect_period_is_the_reference(tokens, min_period, max_period, min_count):
    _same(tokens, min_period=min_period, max_period=max_period, min_count=min_count)


def test_detect_period_is_the_reference_on_odd_inputs():
    for tokens in ([], [5], [5, 5], np.array([], dtype=np.int64), np.zeros(50, dtype=np.int64), [1, 2] * 40):
        for kw in ({}, {"min_period": 1}, {"min_count": 1}, {"min_count": 0}, {"max_period": 0}):
            _same(tokens, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("path", [heldout(p, p.name, id=p.name.removesuffix(".jsonl.gz")) for p in HELDOUT])
def test_detect_period_is_the_reference_on_held_out_traces(path):
    events = load_recording(path.name).devices[0].events  # (the run's worker has it loaded: tests/conftest.py)
    for tokens in (step_tokens(events), tokenize(events)[0]):
        _same(tokens)
