"""The results directory: atomic files, per-unit results, resume, provenance.

Layout of ``results_dir``::

    run.json          provenance: resolved config, `numbers` (what determines the
                      numbers) and its `config_hash`, seed, package versions (with
                      the peer libraries and plug-in packages installed), git
                      commit + dirty flag, `code` (the identity of the code that ran,
                      :mod:`experiments.harness.code_identity`, and how many stale units
                      it recomputed), host, start/end times, n_jobs, runtime, one entry
                      per invocation (resumes), failed-row summary, and `checksums`: the
                      SHA-256 of summary.csv and estimates.npz ({} until they are written)
    summary.csv       one row per (dataset, subset, replicate, statistic, mechanism, ε), in plan
                      order; columns :data:`SUMMARY_COLUMNS`
    estimates.npz     (keep_estimates only) ``estimates``: float array (rows × trials),
                      row i belonging to row i of summary.csv (NaN where status != ok),
                      plus the 1-D arrays :data:`ESTIMATE_KEYS` naming each row
    units/<dataset id>/<statistic>/<label>/<replicate>.npz
                      one finished work unit: ``rows`` (a structured array with the
                      summary columns, one row per ε), ``config_hash`` (the sweep's),
                      ``code`` (the identity of the code that computed it,
                      :mod:`experiments.harness.code_identity`) and, if kept, ``estimates``
    run.log           Hydra's log of the run (command-line runs only)
    .lock             held by the run writing into the directory (filelock)

``summary.csv`` columns: the dataset (``dataset``; ``subset`` such as
``pelvic_incidence/AB`` for real data, empty for synthetic), ``replicate``,
``n`` (points), public ``lower``/``upper`` bounds, ``mechanism`` (the label)
and its ``registry_name``, ``statistic`` (its id, e.g. ``median`` or
``quantile(0.1)``: :mod:`mechanisms.statistics`), ``epsilon``, ``delta`` (given
to the mechanism; 0 for pure DP), ``trials``, ``true_value`` (the statistic of the bounded data),
the errors of :mod:`experiments.harness.metrics`, ``seconds`` (make + release + sample),
the mechanism's reported guarantee (``guarantee_epsilon``, ``guarantee_delta``,
``rho`` (NaN unless zCDP), ``neighbouring``), ``private`` (False when its
parameters were tuned on the private data), ``guarantee_met`` (False when the
claimed guarantee is weaker than the requested ``epsilon``, ``delta``) and
``status`` (``ok`` or a one-line description of what went wrong; then the errors
are NaN).  ``true_value`` is T(S) as the harness computes it, never the
mechanism's claim (:mod:`experiments.harness.unit`).

Reading Figure 2's data, for instance::

    est = np.load("estimates.npz")
    rows = (est["subset"] == "pelvic_incidence/AB") & (est["mechanism"] == "duff")
    estimates, truth = est["estimates"][rows][0], est["true_value"][rows][0]

Every file is written to a temporary file in the same directory and moved into
place with ``os.replace``, so a file either exists complete or not at all.  A
unit file whose rows are all ``ok`` marks the unit done: rerunning with the same
``results_dir`` skips it (a unit with failed rows is computed again, unless
``retry_failed=false``; a unit computed by other code than the current one, or by a
harness that did not record its code, is computed again), and summary.csv /
estimates.npz are rebuilt from all unit files at the end, then ``run.json`` records
the SHA-256 of each (``checksums``), which every reader checks
(:mod:`experiments.harness.results_reader`).  A directory is owned by one config: a run takes its
lock (:func:`lock_results_dir`) *before* comparing its ``run.json`` and holds it
to the end, so two runs never write into one directory at once; a directory
whose ``config_hash`` differs from the current config's is refused, and so is a
unit file that records another config's hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from filelock import FileLock, Timeout

from experiments.harness.metrics import METRICS

if TYPE_CHECKING:
    import pandas as pd
from experiments.base.atomic_files import (
    Writer,
    write_bytes_atomic,
    write_npz_atomic,
    write_text_atomic,
)

RUN_FILE = "run.json"
SUMMARY_FILE = "summary.csv"
ESTIMATES_FILE = "estimates.npz"
UNITS_DIR = "units"
LOCK_FILE = ".lock"

SUMMARY_COLUMNS = (
    "dataset",
    "subset",
    "replicate",
    "n",
    "lower",
    "upper",
    "mechanism",
    "registry_name",
    "statistic",
    "epsilon",
    "delta",
    "trials",
    "true_value",
    *METRICS,
    "seconds",
    "guarantee_epsilon",
    "guarantee_delta",
    "rho",
    "neighbouring",
    "private",
    "guarantee_met",
    "status",
)
"""Columns of ``summary.csv``, in order (see :mod:`experiments.harness.metrics` for the errors)."""

ESTIMATE_KEYS = (
    "dataset",
    "subset",
    "replicate",
    "mechanism",
    "statistic",
    "epsilon",
    "delta",
    "true_value",
)
"""Identity columns repeated in ``estimates.npz`` next to the ``estimates`` matrix."""


class ResultsDirError(ValueError):
    """A results directory that must not be written into (the message says why)."""


class StaleUnitError(ResultsDirError):
    """A unit file computed by other code than the current one (a resumed run recomputes it)."""


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def remove_temporaries(results_dir: Path) -> None:
    """Delete the temporary files of unit writes that never finished.

    A worker killed mid-write (by a crashing plug-in, a timeout or Ctrl-C; the
    pool then stops its siblings too) leaves its ``.*.tmp`` behind; the unit
    itself is rerun.  Call only with the results directory's lock held and no
    worker running.
    """
    for stale in results_dir.glob(f"{UNITS_DIR}/**/.*.tmp"):
        stale.unlink(missing_ok=True)


def config_hash(numbers: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no NaN) of ``numbers``."""
    text = json.dumps(numbers, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------- results dir


def lock_results_dir(results_dir: Path) -> FileLock:
    """Create ``results_dir`` and take its lock (released when the process ends, however).

    Raises :class:`ResultsDirError` when the directory cannot be created or
    written, or when another run holds the lock.
    """
    if results_dir.exists() and not results_dir.is_dir():
        raise ResultsDirError(f"results_dir {results_dir} is a file, not a directory")
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(results_dir / LOCK_FILE, timeout=0)
        lock.acquire()
    except Timeout:
        raise ResultsDirError(
            f"results_dir {results_dir} is in use by another run (it holds {LOCK_FILE}); "
            "wait for that run to finish, or choose another results_dir"
        ) from None
    except OSError as err:
        raise ResultsDirError(
            f"results_dir {results_dir} cannot be written ({err.strerror or err}); "
            "choose a writable results_dir"
        ) from None
    return lock


def differing_keys(old: object, new: object, path: str = "") -> list[str]:
    """Paths such as ``datasets[normal].replicates`` where two JSON-like values differ
    (list items are named by their ``id`` or ``label`` when they have one)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys = sorted(set(old) | set(new), key=str)
        return [
            found
            for key in keys
            for found in differing_keys(old.get(key), new.get(key), f"{path}.{key}".lstrip("."))
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            found
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for found in differing_keys(a, b, f"{path}[{_item_name(a, i)}]")
        ]
    return [] if old == new else [path or "(everything)"]


def _item_name(item: object, index: int) -> str:
    if isinstance(item, Mapping):
        for key in ("id", "label"):
            if isinstance(item.get(key), str):
                return item[key]
    return str(index)


def open_results_dir(results_dir: Path, digest: str, numbers: Mapping[str, Any]) -> dict | None:
    """Check that ``results_dir`` (whose lock the caller holds) may receive config ``digest``.

    Returns the previous ``run.json`` when the directory holds an interrupted or
    finished run of the same config (resume), None when it is new or empty.
    Raises :class:`ResultsDirError` when it holds another config or foreign files.
    Leftover temporary files of an interrupted run are removed.
    """
    run_file = results_dir / RUN_FILE
    remove_temporaries(results_dir)
    if run_file.exists():
        previous = _read_run_file(run_file)
        if previous["config_hash"] != digest:
            differ = differing_keys(previous["numbers"], numbers) or ["format"]
            raise ResultsDirError(
                f"results_dir {results_dir} holds results of a different configuration "
                f"(differs in: {', '.join(differ[:6])}); refusing to mix them. Choose another "
                "results_dir, or delete that directory to start over."
            )
        return previous
    ignored = {LOCK_FILE, ".hydra"}
    foreign = sorted(
        p.name for p in results_dir.iterdir() if not (p.suffix == ".log" or p.name in ignored)
    )
    if foreign:
        raise ResultsDirError(
            f"results_dir {results_dir} is not empty and has no {RUN_FILE} (it holds "
            f"{', '.join(foreign[:5])}); refusing to write into it"
        )
    return None


def _read_run_file(run_file: Path) -> dict[str, Any]:
    """``run.json`` with a string ``config_hash`` and a mapping ``numbers``, or one clear error."""
    try:
        previous = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        previous, problem = None, str(err)
    else:
        problem = "it has no string config_hash and mapping numbers"
    valid = (
        isinstance(previous, dict)
        and isinstance(previous.get("config_hash"), str)
        and isinstance(previous.get("numbers"), dict)
    )
    if not valid:
        raise ResultsDirError(
            f"{run_file} is unreadable ({problem}); refusing to write into its directory. "
            "Delete the directory to start over, or choose another results_dir"
        )
    return previous


def unit_path(
    results_dir: Path, dataset_id: str, statistic: str, label: str, replicate: int
) -> Path:
    """Where the result of work unit (dataset, replicate, statistic id, mechanism label) lives."""
    return results_dir / UNITS_DIR / dataset_id / statistic / label / f"{replicate:05d}.npz"


def save_unit(
    path: Path,
    rows: Mapping[str, np.ndarray],
    estimates: np.ndarray | None,
    digest: str,
    *,
    code: str = "",
    write: Writer = write_bytes_atomic,
) -> np.ndarray:
    """Store one unit (atomically, with ``write``): its rows (a structured array with the
    fields :data:`SUMMARY_COLUMNS`, returned), the config hash ``digest`` of its sweep, the
    identity ``code`` of the code that computed it and, when kept, its ``rows × trials``
    estimates."""
    columns = [np.asarray(rows[column]) for column in SUMMARY_COLUMNS]
    records = np.empty(
        len(columns[0]), dtype=[(c, a.dtype) for c, a in zip(SUMMARY_COLUMNS, columns, strict=True)]
    )
    for column, values in zip(SUMMARY_COLUMNS, columns, strict=True):
        records[column] = values
    arrays = {"rows": records, "config_hash": np.asarray(digest), "code": np.asarray(code)}
    if estimates is not None:
        arrays["estimates"] = estimates
    write_npz_atomic(path, arrays, write)
    return records


@dataclass(frozen=True)
class StoredUnit:
    """The content of a unit file: rows, estimates (``None`` if not stored), the config
    hash of its sweep (``None`` if not recorded) and the code identity (``""`` if not)."""

    records: np.ndarray
    estimates: np.ndarray | None
    digest: str | None
    code: str

    def checked(
        self, path: Path, *, rows: int, trials: int | None, digest: str, code: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and estimates (``rows × 0`` when ``trials`` is None) once checked against
        the plan, as :func:`load_unit` says."""
        remedy = "delete it and rerun the same command to recompute it"
        if self.digest != digest:
            raise ResultsDirError(
                f"unit file {path} belongs to another configuration (config hash "
                f"{(self.digest or 'none')[:12]}, this run's {digest[:12]}); {remedy}"
            )
        if code is not None and self.code != code:
            raise StaleUnitError(
                f"unit file {path} was computed by other code (code {self.code or 'unrecorded'}, "
                f"this run's {code}: the code changed during the run, or the workers run other "
                "code than the main process); rerun the same command to recompute it"
            )
        estimates = self.estimates if trials is not None else np.empty((rows, 0))
        shape_ok = trials is None or (estimates is not None and estimates.shape == (rows, trials))
        if (
            self.records.dtype.names != SUMMARY_COLUMNS
            or self.records.shape != (rows,)
            or not shape_ok
        ):
            raise ResultsDirError(
                f"unit file {path} does not match the plan (expected {rows} rows of "
                f"{len(SUMMARY_COLUMNS)} columns); {remedy}"
            )
        assert estimates is not None
        return self.records, estimates


def load_unit(
    path: Path, *, rows: int, trials: int | None, digest: str, code: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Read a unit file of the sweep ``digest``; check it has ``rows`` rows and, if asked,
    ``rows × trials`` estimates, and, given ``code``, that the code it records is ``code``
    (else :class:`StaleUnitError`).  Any problem is one :class:`ResultsDirError` naming the
    file."""
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as stored:
            unit = StoredUnit(
                records=stored["rows"],
                estimates=stored["estimates"]
                if trials is not None and "estimates" in stored
                else None,
                digest=str(stored["config_hash"]) if "config_hash" in stored else None,
                code=str(stored["code"]) if "code" in stored else "",
            )
    except Exception as err:  # zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError
        raise ResultsDirError(
            f"unit file {path} is unreadable ({type(err).__name__}: {err}); "
            "delete it and rerun the same command to recompute it"
        ) from None
    return unit.checked(path, rows=rows, trials=trials, digest=digest, code=code)


def assemble(
    results_dir: Path,
    paths: Sequence[Path],
    *,
    rows_per_unit: int,
    trials: int | None,
    digest: str,
    codes: Sequence[str] | None = None,
    stored: Mapping[Path, StoredUnit] | None = None,
) -> pd.DataFrame:
    """Write ``summary.csv`` (and ``estimates.npz`` when ``trials`` is given) from unit files.

    Rows follow the order of ``paths`` (the plan's order), so the files do not
    depend on the order in which units finished.  ``codes`` (one per path): the code
    identity each unit file must record (:class:`StaleUnitError` otherwise).  ``stored``:
    the content of unit files this process already has (what the workers that wrote them
    returned), checked in the same way instead of read again.
    """
    import pandas as pd  # imported here: workers, which import this module, never need it

    records, matrices = [], []
    expected: Iterable[str | None] = [None] * len(paths) if codes is None else codes
    known = stored or {}
    for path, code in zip(paths, expected, strict=True):
        unit = known.get(path)
        if unit is None:
            unit_rows, estimates = load_unit(
                path, rows=rows_per_unit, trials=trials, digest=digest, code=code
            )
        else:
            unit_rows, estimates = unit.checked(
                path, rows=rows_per_unit, trials=trials, digest=digest, code=code
            )
        records.append(unit_rows)
        matrices.append(estimates)
    columns = {c: np.concatenate([r[c] for r in records]) for c in SUMMARY_COLUMNS}
    summary = pd.DataFrame(columns)
    write_text_atomic(results_dir / SUMMARY_FILE, summary.to_csv(index=False))
    if trials is not None:
        # Text columns as fixed-width unicode, so np.load needs no pickle.
        arrays = {
            key: columns[key].astype(str) if columns[key].dtype == object else columns[key]
            for key in ESTIMATE_KEYS
        }
        arrays["estimates"] = np.concatenate(matrices)
        write_npz_atomic(results_dir / ESTIMATES_FILE, arrays)
    return summary


def read_summary(results_dir: Path) -> pd.DataFrame:
    """Read ``summary.csv`` as it is; ``subset`` stays a string ("" for synthetic datasets).

    It checks nothing (not even the checksum ``run.json`` records): readers of results
    use :func:`experiments.harness.results_reader.load`.
    """
    import pandas as pd

    summary = pd.read_csv(results_dir / SUMMARY_FILE, dtype={"subset": str})
    summary["subset"] = summary["subset"].fillna("")
    return summary
