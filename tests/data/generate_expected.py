"""Record the outputs of replaced code that the tests compare the current code with, bit for bit.

Run from the repository root (once; again only to record new cases)::

    .venv/bin/python tests/data/generate_expected.py

Three test files used to keep verbatim copies of the code their subject replaced, to
compare with it bit for bit.  Commit 438988b is the last that has them; this script
exports that commit's tree (``git archive``) to a temporary directory and imports from
there both the old code (its ``tests/test_*.py``) and the package modules the old code
calls, so the records are that commit's numbers whatever the working tree holds.  The
cases are read from the current test files (one definition of what is covered), and
the outputs written with :func:`recorded_values.digest` where they are long:

* ``release_fast_path.npz`` (``tests/mechanisms/sampling/test_fast_path.py``): per group
  of cases, ``<group>.true`` (true values) and ``<group>.digests`` (log masses, cdf,
  samples under PCG64 and MT19937) of the old release (``OldRelease``);
* ``noisy_max_integral.npz`` (``tests/mechanisms/mode/test_noisy_max_integral.py``): the
  former run-by-run march's inputs (``scale``, ``threshold``: NaN for none), its log
  probabilities (``log_probabilities``, cut by ``lengths``), ``refusal``, the digests of
  its samples (``sample_digests``) and of its noise laws' floats (``noise_digests``);
* ``validation.npz`` (``tests/mechanisms/core/test_selection.py``): the old
  ``check_data``'s and ``check_bounds``' messages or values.

Before writing, the script checks that the package of that commit gives the same outputs
(what the old tests checked there), so a record is never of code that disagreed.
"""

from __future__ import annotations

import importlib.util
import io
import math
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

FROZEN = "438988b"
"""The last commit whose tests kept the replaced code."""
DATA_DIR = Path(__file__).resolve().parent
TESTS_DIR = DATA_DIR.parent
REPOSITORY = TESTS_DIR.parent


def export(commit: str, target: Path) -> None:
    """The tree of ``commit`` into ``target`` (``git archive``: nothing in the repository
    changes)."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", commit],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fast_path(old: ModuleType, test: ModuleType) -> dict[str, np.ndarray]:
    from mechanisms.core.guarantee import Neighbouring

    out: dict[str, np.ndarray] = {}
    for key, cases in test.GROUPS.items():
        trues, digests = [], []
        for case in cases:
            x = test.datasets(case.n)[case.data]
            release = old.OldRelease(
                x,
                test.BOUNDS,
                case.name,
                case.epsilon,
                case.alpha,
                Neighbouring(case.neighbours),
                case.sampler,
            )
            recorded = test.outputs(release, x)
            current = test.outputs(test.release(case), x)
            if test.bits(recorded[0]) != test.bits(current[0]) or recorded[1] != current[1]:
                raise AssertionError(f"{FROZEN} disagrees with its old release on {case}")
            trues.append(recorded[0])
            digests.append(recorded[1])
        out[f"{key}.true"] = np.array(trues, dtype=np.float64)
        out[f"{key}.digests"] = np.array(digests, dtype=np.uint64).reshape(len(cases), -1)
    return out


def noisy_max(old: ModuleType, test: ModuleType) -> dict[str, np.ndarray]:
    if [case.name for case in old.CASES] != [case.name for case in test.CASES]:
        raise AssertionError("the test's cases are not the old test's")
    scales, thresholds, refusals, lengths, probabilities = [], [], [], [], []
    for index, case in enumerate(old.CASES):
        log_p = old.reference(index)
        if not np.array_equal(case.release.level_log_probabilities, log_p):
            raise AssertionError(f"{FROZEN} disagrees with the former march on {case.name}")
        refusal = 0.0
        if case.threshold is not None:
            log_cdf = case.noise.log_cdf(case.threshold - case.offsets)
            refusal = math.exp(float((log_cdf * case.sizes).sum()))
        if case.release.refusal_probability != refusal:
            raise AssertionError(f"{FROZEN} disagrees on the refusal of {case.name}")
        scales.append(case.noise.scale)
        thresholds.append(math.nan if case.threshold is None else case.threshold)
        refusals.append(refusal)
        lengths.append(log_p.size)
        probabilities.append(log_p)
    samples = []
    for index in test.INDICES[test.SAMPLED]:
        case, size = old.CASES[index], test.SAMPLE_SIZE
        rng, former_rng = np.random.default_rng(5), np.random.default_rng(5)
        sample = case.release.sample(size, rng)
        levels = old.reference_draw(
            case.offsets, case.sizes, case.noise, case.threshold, size, former_rng
        )
        expected = np.full(size, np.nan)
        expected[levels >= 0] = case.release.levels.uniform(levels[levels >= 0], former_rng)
        np.testing.assert_array_equal(sample, expected)
        samples.append(test.digest(expected, canonical=True))
    x = test.noise_law_points()
    laws = np.zeros((len(test.NOISE_KINDS), len(test.NOISE_SCALES), len(test.NOISE_OUTPUTS)))
    laws = laws.astype(np.uint64)
    for i, kind in enumerate(test.NOISE_KINDS):
        for j, scale in enumerate(test.NOISE_SCALES):
            law = old.FormerNoise(kind, scale)
            with np.errstate(all="ignore"):
                former = [law.log_cdf(x), law.log_pdf(x), law.hazard(x), law.log_pdf_slope(x)]
            for k, (a, b) in enumerate(
                zip(former, test.noise_law_outputs(kind, scale, x), strict=True)
            ):
                np.testing.assert_array_equal(b, a)
                laws[i, j, k] = test.digest(a, canonical=True)
    return {
        "scale": np.array(scales, dtype=np.float64),
        "threshold": np.array(thresholds, dtype=np.float64),
        "refusal": np.array(refusals, dtype=np.float64),
        "lengths": np.array(lengths, dtype=np.int64),
        "log_probabilities": np.concatenate(probabilities).astype(np.float64),
        "sample_digests": np.array(samples, dtype=np.uint64),
        "noise_digests": laws,
    }


def validation(old: ModuleType, test: ModuleType) -> dict[str, np.ndarray]:
    from mechanisms.core import validation as current

    data_messages, data_lengths, data_values = [], [], []
    for data in test.DATA:
        found, new = test.outcome(old.old_check_data, data), test.outcome(current.check_data, data)
        if isinstance(found, str) or isinstance(new, str):
            same = new == found
        else:
            same = type(new) is type(found) and np.array_equal(test.bits(new), test.bits(found))
        if not same:
            raise AssertionError(f"{FROZEN} disagrees with the old check_data on {data!r}")
        if isinstance(found, str):
            data_messages.append(found)
            data_lengths.append(0)
        else:
            assert type(found) is np.ndarray and found.ndim == 1
            data_messages.append("")
            data_lengths.append(found.size)
            data_values.append(found.astype(np.float64))
    old_bounds, new_bounds = test.bounds_inputs(), test.bounds_inputs()
    bounds_messages, bounds_values = [], []
    for old_input, new_input in zip(old_bounds, new_bounds, strict=True):
        found = test.outcome(old.old_check_bounds, old_input)
        if test.outcome(current.check_bounds, new_input) != found:
            raise AssertionError(f"{FROZEN} disagrees with the old check_bounds on {old_input!r}")
        bounds_messages.append(found if isinstance(found, str) else "")
        bounds_values.append((math.nan, math.nan) if isinstance(found, str) else found)
    return {
        "data_messages": np.array(data_messages, dtype=str),
        "data_lengths": np.array(data_lengths, dtype=np.int64),
        "data_values": np.concatenate([np.zeros(0), *data_values]),
        "bounds_messages": np.array(bounds_messages, dtype=str),
        "bounds_values": np.array(bounds_values, dtype=np.float64),
    }


RECORDS = {  # record: (old test file at FROZEN, current test file, recorder)
    "release_fast_path": (
        "tests/test_release_fast_path.py",
        "mechanisms/sampling/test_fast_path.py",
        fast_path,
    ),
    "noisy_max_integral": (
        "tests/test_noisy_max_speed_exactness.py",
        "mechanisms/mode/test_noisy_max_integral.py",
        noisy_max,
    ),
    "validation": (
        "tests/test_selection.py",
        "mechanisms/core/test_selection.py",
        validation,
    ),
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        export(FROZEN, tree)
        sys.path[:0] = [str(tree), str(TESTS_DIR)]  # the commit's packages, then the helpers
        import mechanisms

        assert Path(mechanisms.__file__).is_relative_to(tree), mechanisms.__file__
        for name, (old_file, test_file, record) in RECORDS.items():
            old = load(tree / old_file, f"old_{name}")
            test = load(TESTS_DIR / test_file, f"current_{name}")
            arrays = record(old, test)
            target = DATA_DIR / f"{name}.npz"
            np.savez_compressed(target, **arrays)
            print(f"{target.relative_to(REPOSITORY)}: {target.stat().st_size} bytes")


if __name__ == "__main__":
    main()
