"""Synthetic datasets and the Vertebral Column loader (search order, checks, download)."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import CONF_DIR

from experiments.data import vertebral
from experiments.data.datasets import DatasetError, build_datasets
from experiments.data.vertebral import (
    VERTEBRAL_MEASUREMENTS,
    load_vertebral,
    locate_vertebral,
    parse_vertebral,
)
from experiments.harness.conf_files import load_entry

SHARED_FILE = vertebral.SHARED_DATA_DIR / vertebral.VERTEBRAL_MEMBER
# Per-class medians of the six measurements, from /work/shared/data/README.md.
README_MEDIANS = {
    "AB": [65.275, 18.795, 56.15, 44.64, 115.65, 31.945],
    "NO": [50.125, 13.485, 42.64, 37.06, 123.875, 1.155],
}
REAL_FETCH = vertebral.fetch
SYNTHETIC = "experiments.data.datasets.SyntheticDataset"
NORMAL_OPTIONS = {"distribution": "normal", "bounds": [-10, 10]}
NORMAL = {"name": "normal", "_target_": SYNTHETIC, "options": NORMAL_OPTIONS}


def normal_with(**options) -> dict:
    """The N(0, 1) entry with some options changed."""
    return {**NORMAL, "options": {**NORMAL_OPTIONS, **options}}


def fake_vertebral(seed: int = 0) -> bytes:
    """A well-formed column_2C.dat with made-up values: 210 AB rows then 100 NO rows."""
    rng = np.random.default_rng(seed)
    lines = [
        " ".join(f"{v:.2f}" for v in rng.uniform(-10, 150, 6)) + f" {label}"
        for label in ["AB"] * 210 + ["NO"] * 100
    ]
    return ("\n".join(lines) + "\n").encode()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, content in members.items():
            bundle.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configured path, no $VERTEBRAL_DATA, an empty cache and shared dir, no network."""
    monkeypatch.delenv(vertebral.VERTEBRAL_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(vertebral, "SHARED_DATA_DIR", tmp_path / "shared")

    def no_network(url: str) -> bytes:
        raise AssertionError(f"unexpected download of {url}")

    monkeypatch.setattr(vertebral, "fetch", no_network)
    return tmp_path


# --------------------------------------------------------------------- synthetic


def test_synthetic_replicates_are_seeded_by_name_and_replicate() -> None:
    (normal,) = build_datasets(NORMAL, n=500, replicates=3)
    first = normal.data(seed=1, replicate=0)
    assert first.shape == (500,) and first.dtype == np.float64
    np.testing.assert_array_equal(first, normal.data(seed=1, replicate=0))
    assert not np.array_equal(first, normal.data(seed=1, replicate=1))
    assert not np.array_equal(first, normal.data(seed=2, replicate=0))
    renamed = build_datasets({**NORMAL, "name": "gauss"}, n=500, replicates=3)[0]
    assert not np.array_equal(first, renamed.data(seed=1, replicate=0))
    with pytest.raises(ValueError, match=r"replicate must be in \[0, 3\)"):
        normal.data(seed=1, replicate=3)


@pytest.mark.parametrize(
    ("name", "mean", "middle"),
    # Beta(0.5, 0.5) puts 1/3 of its mass in [0.25, 0.75]; U(0, 1) 1/2; N(0, 1) 0.383.
    [("normal", 0.0, 0.3829), ("uniform", 0.5, 0.5), ("beta", 0.5, 1 / 3)],
)
def test_shipped_distributions(name: str, mean: float, middle: float) -> None:
    entry = load_entry(CONF_DIR, "dataset", name)
    (dataset,) = build_datasets(entry, n=20000, replicates=1)
    x = dataset.data(seed=5, replicate=0)
    assert dataset.lower <= x.min() and x.max() <= dataset.upper
    assert abs(x.mean() - mean) < 0.02
    centre = mean if name != "normal" else 0.0
    half = 0.25 if name != "normal" else 0.5
    assert abs(np.mean(np.abs(x - centre) <= half) - middle) < 0.015


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (normal_with(distribution="poisson"), "distribution must be one of"),
        (normal_with(bounds=[1, 0]), "a < b"),
        (normal_with(bounds=3), "bounds must be a pair"),
        (normal_with(params=[1]), "params must be a mapping"),
        ({**NORMAL, "_target_": "magic"}, "_target_ must be 'package.module.ClassName'"),
        ({**NORMAL, "_target_": "numpy.ndarray"}, "is not a subclass of Dataset"),
        ({**NORMAL, "_target_": "experiments.data.datasets.Dataset"}, "does not implement data"),
        ({**NORMAL, "kind": "synthetic"}, "unknown fields kind"),
        ({**NORMAL, "options": [1]}, "options must be a mapping"),
        (normal_with(params={"scale": -1}), r"bad params \{'scale': -1\}"),
        (normal_with(params={"sd": 1}), "bad params .*unexpected keyword argument 'sd'"),
    ],
)
def test_bad_dataset_entries(entry: dict, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        build_datasets(entry, n=10, replicates=1)


# --------------------------------------------------------------------- vertebral


@pytest.mark.skipif(not SHARED_FILE.is_file(), reason="shared Vertebral data not present")
def test_real_vertebral_data_matches_the_readme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(vertebral.VERTEBRAL_ENV, str(SHARED_FILE))
    data = load_vertebral()
    assert data.values.shape == (310, 6)
    for label, medians in README_MEDIANS.items():
        for measurement, median in zip(VERTEBRAL_MEASUREMENTS, medians, strict=True):
            assert np.median(data.column(measurement, label)) == pytest.approx(median, abs=1e-9)
    entry = {"name": "vertebral", "_target_": "experiments.data.vertebral.VertebralColumn"}
    subsets = build_datasets(entry, n=1, replicates=1)
    assert [d.subset for d in subsets[:3]] == [
        "pelvic_incidence/AB",
        "pelvic_incidence/NO",
        "pelvic_tilt/AB",
    ]
    assert len(subsets) == 12 and {d.size for d in subsets} == {210, 100}
    for dataset in subsets:
        both = data.column(dataset.subset.split("/")[0])
        assert dataset.bounds == (both.min(), both.max())
        assert dataset.replicates == 1 and dataset.id == f"vertebral/{dataset.subset}"


def test_search_order(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    places = {
        "config": isolated / "config" / "column_2C.dat",
        "env": isolated / "env" / "column_2C.dat",
        "cache": isolated / "cache" / "duff-bench" / "column_2C.dat",
        "shared": isolated / "shared" / "column_2C.dat",
    }
    for seed, path in enumerate(places.values()):
        path.parent.mkdir(parents=True)
        path.write_bytes(fake_vertebral(seed))
    monkeypatch.setenv(vertebral.VERTEBRAL_ENV, str(places["env"]))
    assert locate_vertebral(places["config"]) == places["config"]
    assert locate_vertebral(places["config"].parent) == places["config"]  # a directory works
    assert locate_vertebral() == places["env"]
    monkeypatch.delenv(vertebral.VERTEBRAL_ENV)
    assert locate_vertebral() == places["cache"]
    places["cache"].unlink()
    assert locate_vertebral() == places["shared"]
    assert load_vertebral().sha256 == parse_vertebral(fake_vertebral(3), "x").sha256
    places["shared"].unlink()
    assert locate_vertebral() is None


def test_an_explicit_location_must_exist(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DatasetError, match=r"the config's path points to .*nowhere.dat"):
        locate_vertebral(isolated / "nowhere.dat")
    monkeypatch.setenv(vertebral.VERTEBRAL_ENV, str(isolated / "gone"))
    with pytest.raises(DatasetError, match=r"\$VERTEBRAL_DATA points to .*gone"):
        locate_vertebral()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace(" AB\n", " XX\n", 1), "line 1 has class 'XX'"),
        (lambda text: text.replace(" AB\n", "\n", 1), "line 1 has 6 fields, expected 7"),
        (lambda text: "abc" + text, "line 1 has a non-numeric measurement"),
        (lambda text: "nan" + text[text.index(" ") :], "line 1 has a non-finite value"),
        (lambda text: text[: text.rindex("\n", 0, -1) + 1], "309 rows, expected 310"),
        (lambda text: text.replace(" NO\n", " AB\n", 1), "class counts {'AB': 211, 'NO': 99}"),
        (lambda text: "é" + text, "not a text file"),
    ],
)
def test_corrupt_files_are_named_with_the_problem(isolated: Path, edit, message: str) -> None:
    path = isolated / "bad" / "column_2C.dat"
    path.parent.mkdir()
    path.write_bytes(edit(fake_vertebral().decode("latin-1")).encode("utf-8"))
    with pytest.raises(
        DatasetError, match=re.escape(f"vertebral data {path}: ") + ".*" + re.escape(message)
    ):
        load_vertebral(path)


def test_download_from_a_file_url_fills_the_cache(isolated: Path, monkeypatch) -> None:
    archive = isolated / "vertebral+column.zip"
    content = fake_vertebral(7)
    archive.write_bytes(zip_bytes({"column_3C.dat": b"other", "column_2C.dat": content}))
    monkeypatch.setattr(vertebral, "fetch", REAL_FETCH)  # a real read of a file:// URL
    data = load_vertebral(url=archive.as_uri())
    cached = isolated / "cache" / "duff-bench" / "column_2C.dat"
    assert cached.read_bytes() == content and data.source == str(cached)
    assert not [p for p in cached.parent.iterdir() if p != cached]  # no temp file left
    monkeypatch.setattr(vertebral, "fetch", lambda url: pytest.fail("downloaded twice"))
    assert load_vertebral(url=archive.as_uri()).sha256 == data.sha256


def test_the_default_url_is_the_official_archive(isolated: Path, monkeypatch) -> None:
    requested = []

    def fake_fetch(url: str) -> bytes:
        requested.append(url)
        return zip_bytes({"vertebral/column_2C.dat": fake_vertebral()})

    monkeypatch.setattr(vertebral, "fetch", fake_fetch)
    load_vertebral()
    assert requested == ["https://archive.ics.uci.edu/static/public/212/vertebral+column.zip"]


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (b"not a zip", "is not a zip archive"),
        (zip_bytes({"column_3C.dat": b"x"}), "has no member column_2C.dat"),
        (zip_bytes({"column_2C.dat": b"1 2 3 4 5 6 AB\n"}), r"\(member column_2C.dat\): 1 rows"),
    ],
)
def test_a_wrong_download_is_refused_and_not_cached(
    isolated: Path, monkeypatch, archive: bytes, message: str
) -> None:
    monkeypatch.setattr(vertebral, "fetch", lambda url: archive)
    with pytest.raises(DatasetError, match=message):
        load_vertebral(url="https://example.invalid/v.zip")
    assert not (isolated / "cache").exists()


def test_offline_without_the_file_says_where_it_looked_in_one_line(isolated: Path, monkeypatch):
    """No file in any place and no network: one line naming the places and the remedy."""
    monkeypatch.setattr(vertebral, "fetch", REAL_FETCH)
    unreachable = "http://127.0.0.1:9/vertebral+column.zip"  # the discard port: refused
    with pytest.raises(DatasetError) as info:
        load_vertebral(url=unreachable)
    message = str(info.value)
    assert "\n" not in message and info.value.__suppress_context__
    assert str(isolated / "cache" / "duff-bench" / "column_2C.dat") in message
    assert str(isolated / "shared" / "column_2C.dat") in message
    assert f"downloading {unreachable} failed" in message and "$VERTEBRAL_DATA" in message
