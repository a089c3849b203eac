"""Selection instead of a sort: the order statistics a release reads are those of the full sort,
and the releases of Duff and the quantile EM are the same, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import mechanisms
from mechanisms.selection import OrderStatistics

N_LARGE = 300_000  # stride 4 for the sampled selection


def datasets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        "normal": rng.normal(size=N_LARGE),
        "ties": np.round(rng.normal(size=N_LARGE), 1),  # 80 values, long runs of ties
        "sorted": np.sort(rng.uniform(size=N_LARGE)),
        "reversed": np.sort(rng.uniform(size=N_LARGE))[::-1].copy(),
        "two_points": np.repeat([0.25, 0.75], N_LARGE // 2),
        "small": rng.exponential(size=1000),
    }


@pytest.mark.parametrize("name", sorted(datasets()))
@pytest.mark.parametrize("gather", [True, False], ids=["sampled", "partition"])
def test_blocks_and_counts_are_the_full_sorts(name, gather, monkeypatch) -> None:
    if not gather:  # as when the sample misses the window: introselect does the work
        monkeypatch.setattr(OrderStatistics, "_gather", lambda self, start, stop: False)
    x = datasets()[name]
    full = np.sort(x)
    n = x.size
    for start, stop in [(n // 2, n // 2 + 1), (n // 3, n // 3 + 500), (0, 40), (n - 40, n)]:
        order = OrderStatistics(x.copy())
        np.testing.assert_array_equal(order[start:stop], full[start:stop])
        low, high = order.window
        assert low <= start and stop <= high
        assert order[start] == full[start] and order[-1] == full[-1]
        for value in (full[start], full[start] + 1e-9, full[(start + stop) // 2], 0.5):
            for side in ("left", "right"):
                assert order.searchsorted(value, side) == np.searchsorted(full, value, side)
    np.testing.assert_array_equal(OrderStatistics(x.copy()).sorted(), full)


class UnsortedBlock(OrderStatistics):
    """Planted bug: the gathered block is not sorted."""

    def _gather(self, start: int, stop: int) -> bool:
        found = super()._gather(start, stop)
        if found:
            self._block = self._block[::-1].copy()
        return found


def test_an_unsorted_block_is_caught() -> None:
    x = datasets()["normal"]
    order = UnsortedBlock(x.copy())
    assert not np.array_equal(order[1000:1100], np.sort(x)[1000:1100])


def test_bad_input_and_bad_indices() -> None:
    with pytest.raises(ValueError, match="1-D float64"):
        OrderStatistics(np.arange(3))
    order = OrderStatistics(np.array([3.0, 1.0, 2.0]))
    with pytest.raises(IndexError):
        order[3]
    with pytest.raises(ValueError, match="step 1"):
        order[::2]
    assert order.extremes() == (1.0, 3.0) and order[0:0].size == 0
    order.select(lambda: (0, 1))  # small data: sorted whole, whatever is asked
    assert order.window == (0, 3)
    large = OrderStatistics(datasets()["normal"].copy())
    large.select(lambda: (1000, 1100))
    low, high = large.window
    assert low <= 1000 and 1100 <= high < N_LARGE // 2


CASES = [
    ("duff", {}),
    ("duff", {"alpha": 0.9, "neighbours": "replace_one"}),
    ("duff", {"alpha": 0.05}),
    ("quantile_em", {"alpha": 0.3}),
    ("quantile_em", {"alpha": 0.5, "neighbours": "replace_one"}),
    ("duff", {"sampler": "racing"}),
]


@pytest.mark.parametrize(("name", "options"), CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("data", ["normal", "ties", "two_points", "small"])
def test_releases_by_selection_are_the_sorted_ones(name, options, data) -> None:
    x = datasets()[data]
    points = np.linspace(-1.0, 3.0, 4001)
    for epsilon in (0.01, 1.0, 20.0):
        mechanism = mechanisms.make(name, epsilon=epsilon, **options)
        selected = mechanism.release(x, (-1.0, 3.0))
        sorted_ = mechanism._release(np.sort(np.clip(x, -1.0, 3.0)), -1.0, 3.0)
        assert selected.true_value == sorted_.true_value
        np.testing.assert_array_equal(selected.cdf(points), sorted_.cdf(points))
        draws = [r.sample(500, np.random.default_rng(3)) for r in (selected, sorted_)]
        np.testing.assert_array_equal(*draws)
        if data == "normal" and epsilon >= 1.0 and selected.true_value > -1.0:
            low, high = selected._x.window  # selected, unless the truth is in the run
            assert high - low < x.size // 2  # of points clipped to the lower bound
