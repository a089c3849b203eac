"""A sweep a user can trust: one owner per results directory, one-line errors, clean stops."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from filelock import FileLock
from harness_mechanisms import GAUSSIAN, LAPLACE, PROJECT_ROOT, start_cli, tiny_overrides

from experiments.harness.config import ConfigError, available_cores, worker_count
from experiments.harness.results import LOCK_FILE, RUN_FILE, ResultsDirError, read_summary
from experiments.run import run

MECHANISMS_ARG = "mechanisms=[{label:lap,name:harness_laplace}]"


def finished(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


# ------------------------------------------------------------ one owner per directory


def test_a_locked_results_dir_is_refused_before_its_config_is_read(
    compose_config, tmp_path
) -> None:
    results = tmp_path / "out"
    results.mkdir()
    cfg = compose_config(tiny_overrides(), [LAPLACE])
    # another run is writing here:
    with FileLock(results / LOCK_FILE), pytest.raises(ResultsDirError, match="in use by another"):
        run(cfg, results_dir=results)
    assert sorted(p.name for p in results.iterdir()) == [LOCK_FILE]


def test_two_runs_with_different_configs_never_mix(tmp_path) -> None:
    """Started together into one directory: one completes, the other is refused."""
    results = tmp_path / "shared"
    args = [*tiny_overrides(n=2001, replicates=20, trials=2000), MECHANISMS_ARG]
    processes = [
        start_cli(*args, f"seed={seed}", f"results_dir={results}", cwd=tmp_path) for seed in (1, 2)
    ]
    outcomes = [finished(p) for p in processes]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 1], outcomes
    refused = next(stderr for code, stderr in outcomes if code == 1)
    assert last_line(refused).startswith("duff-run: error: results_dir")
    assert "in use by another run" in refused or "different configuration" in refused
    seed = json.loads((results / RUN_FILE).read_text())["seed"]
    summary = read_summary(results)
    assert len(summary) == 2 * 20 * 2 and seed in (1, 2)
    winner = [a for a, (code, _) in zip((1, 2), outcomes, strict=True) if code == 0]
    assert winner == [seed]


def test_a_unit_file_of_another_config_is_refused(compose_config, tmp_path) -> None:
    first = run(compose_config(tiny_overrides(seed=1), [LAPLACE]), results_dir=tmp_path / "a")
    second = run(compose_config(tiny_overrides(seed=2), [LAPLACE]), results_dir=tmp_path / "b")
    unit = sorted((second / "units").rglob("*.npz"))[0]
    target = first / unit.relative_to(second)
    target.write_bytes(unit.read_bytes())  # copied from the other seed's run
    with pytest.raises(ResultsDirError, match=f"unit file {target} belongs to another config"):
        run(compose_config(tiny_overrides(seed=1), [LAPLACE]), results_dir=first)


def test_the_default_results_dir_is_unique_and_holds_the_log(tmp_path) -> None:
    """Two runs started in the same second get different directories (time + pid)."""
    args = [*tiny_overrides(), MECHANISMS_ARG]
    processes = [start_cli(*args, cwd=tmp_path) for _ in range(2)]
    assert [finished(p)[0] for p in processes] == [0, 0]
    directories = sorted((tmp_path / "results" / "smoke").iterdir())
    assert len(directories) == 2
    for directory in directories:
        assert {RUN_FILE, "run.log", "summary.csv"} <= {p.name for p in directory.iterdir()}
    pids = {d.name.rsplit("-", 1)[1] for d in directories}
    assert pids == {str(p.pid) for p in processes}


# ----------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    ("override", "hint"),
    [
        ("+mechanism=laplace_global", "'mechanism': to choose mechanisms, write mechanisms=["),
        ("+epsilon=[5.0]", "'epsilon': to choose epsilons, write epsilons=["),
        ("+replicate=3", "'replicate': did you mean replicates?"),
        # without the "+", the same line (before Hydra answers with its own error)
        ("mechanism=duff", "'mechanism': to choose mechanisms, write mechanisms=["),
        ("epsilon=0.5", "'epsilon': to choose epsilons, write epsilons=["),
        ("replicate=3", "'replicate': did you mean replicates?"),
    ],
)
def test_stray_keys_are_refused_in_one_line(override, hint, tmp_path) -> None:
    code, stderr = finished(start_cli(*tiny_overrides(), MECHANISMS_ARG, override, cwd=tmp_path))
    assert code == 1
    message = stderr.strip()
    assert message.startswith(f"duff-run: error: unknown config key {hint}"), stderr
    assert len(message.splitlines()) == 1
    assert not (tmp_path / "results").exists()  # a refused run leaves nothing behind


def test_a_refused_run_leaves_nothing_behind(tmp_path) -> None:
    code, _ = finished(start_cli(*tiny_overrides(), "mechanisms=[no_such]", cwd=tmp_path))
    assert code == 1 and not (tmp_path / "results").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("the user's")
    args = [*tiny_overrides(), MECHANISMS_ARG, f"results_dir={foreign}"]
    code, stderr = finished(start_cli(*args, cwd=tmp_path))
    assert code == 1 and "refusing to write into it" in stderr
    assert [p.name for p in foreign.iterdir()] == ["mine.txt"]


def test_help_points_at_the_lists_not_at_groups(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "experiments.run", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "mechanisms=[...]" in done.stdout and "not dataset=... or mechanism=..." in done.stdout
    for experiment in (PROJECT_ROOT / "conf" / "experiment").glob("*.yaml"):
        if not experiment.stem.startswith("_"):  # _base.yaml: shared keys, not an experiment
            assert experiment.stem in done.stdout


def test_a_sweep_with_failed_rows_says_so_and_exits_3(tmp_path) -> None:
    gauss = "mechanisms=[{label:gauss,name:harness_gaussian,takes_delta:true}]"
    args = tiny_overrides(epsilons="[0.5,1.5]")  # the classical bound fails at ε = 1.5
    code, stderr = finished(start_cli(*args, gauss, f"results_dir={tmp_path / 'o'}", cwd=tmp_path))
    assert code == 3
    assert last_line(stderr) == (
        f"duff-run: done with failures: 4 of 8 rows failed (see the status column of "
        f"{tmp_path / 'o' / 'summary.csv'}); exit status 3"
    )


def a_long_sweep_under_way(results: Path) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """A CLI sweep into ``results`` that has saved its first unit, and its worker processes."""
    # minutes of work (it is stopped after its first unit): under load, a shorter sweep could
    # finish before the test's signal reaches it
    overrides = tiny_overrides(n=20001, replicates=2000, trials=20000, n_jobs=2)
    process = start_cli(*overrides, MECHANISMS_ARG, f"results_dir={results}", cwd=results.parent)
    deadline = time.monotonic() + 60
    while not any((results / "units").rglob("*.npz")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.01)
    return process, psutil.Process(process.pid).children(recursive=True)


def test_ctrl_c_saves_finished_units_and_says_how_to_resume(tmp_path) -> None:
    results = tmp_path / "out"
    process, workers = a_long_sweep_under_way(results)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
    code, stderr = finished(process)
    assert code == 130, stderr
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert lines[-1].startswith("duff-run: interrupted: ")
    assert lines[-1].endswith(f"units saved in {results}; rerun the same command to resume")
    assert not list(results.rglob("*.tmp"))
    psutil.wait_procs(workers, timeout=10)
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


def test_workers_end_when_the_main_process_is_killed(tmp_path) -> None:
    results = tmp_path / "out"
    process, workers = a_long_sweep_under_way(results)
    assert workers
    process.kill()  # kill -9 of the main process alone
    process.communicate()
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE]


def test_a_writer_killed_mid_sweep_leaves_no_temporary(compose_config, tmp_path, monkeypatch):
    """A worker killed while writing a unit (the pool stops every worker when one
    dies) leaves ``.*.tmp``; the unit is rerun and the temporary removed."""
    from experiments import run as run_module

    results = tmp_path / "out"
    execute = run_module.execute_units

    def killed_writer(todo, *args, **kwargs):
        unit_dir = todo[0][1].parent
        unit_dir.mkdir(parents=True)
        (unit_dir / f".{todo[0][1].name}.4242.0badc0de.tmp").write_bytes(b"half a unit")
        return execute(todo, *args, **kwargs)

    monkeypatch.setattr(run_module, "execute_units", killed_writer)
    run(compose_config(tiny_overrides(), [LAPLACE]), results_dir=results)
    assert set(read_summary(results)["status"]) == {"ok"}
    assert not list(results.rglob("*.tmp"))


# ----------------------------------------------------------------- corrupt inputs


def _reference(compose_config, directory: Path) -> tuple[object, Path]:
    cfg = compose_config(tiny_overrides(), [LAPLACE, GAUSSIAN])
    return cfg, run(cfg, results_dir=directory)


def test_a_truncated_unit_file_is_named_with_the_remedy(compose_config, tmp_path) -> None:
    cfg, results = _reference(compose_config, tmp_path / "out")
    unit = sorted((results / "units").rglob("*.npz"))[0]
    unit.write_bytes(unit.read_bytes()[:100])
    with pytest.raises(ResultsDirError, match=f"unit file {unit} is unreadable .*delete it"):
        run(cfg, results_dir=results)


@pytest.mark.parametrize("content", ['{"numbers": [[1]]}', "[1, 2]", "{trunc"])
def test_an_unreadable_run_json_is_one_error(content, compose_config, tmp_path) -> None:
    cfg, results = _reference(compose_config, tmp_path / "out")
    (results / RUN_FILE).write_text(content)
    with pytest.raises(ResultsDirError, match=r"run\.json is unreadable .*Delete the directory"):
        run(cfg, results_dir=results)


def test_a_changed_key_is_named(compose_config, tmp_path) -> None:
    _, results = _reference(compose_config, tmp_path / "out")
    more = compose_config(tiny_overrides(replicates=3), [LAPLACE, GAUSSIAN])
    with pytest.raises(
        ResultsDirError,
        match=r"differs in: datasets\[normal\]\.replicates, datasets\[beta\]\.replicates\)",
    ):
        run(more, results_dir=results)


def test_a_read_only_results_dir_is_one_error(compose_config, tmp_path, monkeypatch) -> None:
    results = tmp_path / "ro"
    results.mkdir()
    results.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0:  # root writes anyway: make the lock file's creation fail as it would

        def denied(self, *args, **kwargs):
            raise PermissionError(13, "Permission denied", str(results / LOCK_FILE))

        monkeypatch.setattr(FileLock, "acquire", denied)
    with pytest.raises(ResultsDirError, match=r"ro cannot be written .*Permission denied"):
        run(compose_config(tiny_overrides(), [LAPLACE]), results_dir=results)


def test_a_results_dir_that_cannot_be_created_is_one_error(compose_config, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cfg = compose_config(tiny_overrides(), [LAPLACE])
    with pytest.raises(ResultsDirError, match="is a file, not a directory"):
        run(cfg, results_dir=blocker)
    with pytest.raises(ResultsDirError, match="cannot be written"):
        run(cfg, results_dir=blocker / "below")


def test_n_jobs_is_capped_at_the_cores(caplog) -> None:
    cores = available_cores()
    assert worker_count(100 * cores) == cores
    assert f"n_jobs={100 * cores} but only {cores} cores" in caplog.text
    assert worker_count(-1) == cores and worker_count(1) == 1
    assert worker_count(-(cores + 5)) == 1
    with pytest.raises(ConfigError, match="n_jobs must be a non-zero integer"):
        worker_count(0)


def test_identical_numbers_for_any_worker_count(compose_config, tmp_path) -> None:
    cfg = compose_config(tiny_overrides(), [LAPLACE, GAUSSIAN])
    one = read_summary(run(cfg, results_dir=tmp_path / "one", n_jobs=1))
    two = read_summary(run(cfg, results_dir=tmp_path / "two", n_jobs=2))
    columns = ["true_value", "mean_abs_error", "rmse", "mean_error"]
    np.testing.assert_array_equal(one[columns].to_numpy(), two[columns].to_numpy())
