"""Run work units in worker processes so that no mechanism can stop the sweep.

A task is a short run of work units that one worker computes one after the other
(batched: one process round trip for several units; :mod:`experiments.harness.execute`
chooses how many).  A work unit runs in a worker process (loky, joblib's process
pool; or a Dask cluster).  Whatever the mechanism does, the unit ends with a unit file:

* an exception of any kind, ``SystemExit`` and ``KeyboardInterrupt`` included,
  or a unit past its time limit interrupted in the worker: recorded by the
  worker itself (:mod:`experiments.harness.unit`);
* the worker process dies (``os._exit``, a segfault, the out-of-memory killer):
  the units of its task that finished are kept (``progress`` says which), and the
  first unfinished unit of every task in flight is rerun *alone* in a fresh worker,
  so the one that kills its worker again is identified and recorded as failed with
  the worker's exit code; the innocent ones and the rest of the tasks complete;
* the unit hangs where the worker's own timer cannot reach (C code that never
  returns to the interpreter): ``timeout + HARD_LIMIT_GRACE`` seconds after it
  started (the end of the task's previous unit, or the task's start) the pool is
  killed, and the unit recorded as timed out (rerun alone first if its task had
  others); the other units are rerun.

At most one task per worker is in flight, so a task's units run from its submission
on, and a crash involves at most ``workers`` running units.

Workers ignore SIGINT (Ctrl-C reaches the whole process group; only the main
process reacts, and ends the workers) and exit by themselves within a second
when the main process disappears (``kill -9``), instead of lingering.

Under ``backend=dask`` the cluster runs the tasks on its worker threads: a
dead Dask worker is reported by the scheduler for its own task, and a task past
its hard limit is recorded and cancelled, though its thread cannot be stopped.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Protocol

HARD_LIMIT_GRACE = 5.0
"""Seconds past a unit's timeout before its worker is killed from outside."""
POLL_SECONDS = 0.5
PARENT_CHECK_SECONDS = 1.0


@dataclass
class Task:
    """Units to run in one worker call, in order: ``function(items, *arguments)``, which
    returns one result per item; ``items`` (at least one) name the units to callbacks."""

    items: tuple[Any, ...]
    function: Callable[..., Any]
    arguments: tuple[Any, ...]
    started: float = field(default=0.0, compare=False)
    """When it was submitted (``time.time()``)."""

    def rest(self, start: int) -> Task:
        """The same task for ``items[start:]``."""
        return Task(self.items[start:], self.function, self.arguments)


Progress = Callable[[Task], "tuple[int, float]"]
"""How many leading items of a task in flight have finished (their unit files are
written) and when the last of them did (``time.time()``; 0 if none)."""


def no_progress(task: Task) -> tuple[int, float]:
    """The :data:`Progress` of tasks whose items leave no trace before the task returns."""
    return 0, 0.0


class Pool(Protocol):
    """Where tasks run: a loky process pool or a Dask cluster."""

    crashes: tuple[type[BaseException], ...]

    def submit(self, task: Task) -> Any: ...
    def wait(self, futures: Sequence[Any], timeout: float) -> set[Any]: ...
    def kill(self) -> None: ...


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_CHECK_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def _ready(_: int) -> int:
    return os.getpid()


def _init_worker(parent: int, modules: tuple[str, ...], code: str = "") -> None:
    """In each loky worker: leave Ctrl-C to the main process; die with it; import the
    mechanisms' modules up front, so that no unit's time limit pays for the imports, and
    read the source just imported (:func:`experiments.harness.code_identity.pin`: the
    identity a unit records is the code's as imported; ``code``, the parent's identity of
    it, only makes a changed code start fresh workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    for module in modules:
        with suppress(Exception):  # the unit that needs the module records the error
            import_module(module)
    from experiments.harness.code_identity import pin

    pin()


KEPT_POOLS = 2
"""Worker pools kept alive between the sweeps of a process (the built-in mechanisms' and
the last plug-in group's, typically), each idle for at most a minute."""
_POOLS: OrderedDict[tuple[int, str], tuple[Any, tuple[str, ...]]] = OrderedDict()
"""(workers, code) -> a live loky executor and the modules its workers imported."""


def _usable(executor: Any) -> bool:
    """Whether a kept loky executor still takes work (a worker that died while it idled
    breaks it: loky's flags, which its ``submit`` reads)."""
    flags = executor._flags
    return flags.broken is None and not flags.shutdown


def _drop_pool(key: tuple[int, str], *, kill: bool) -> None:
    executor, _ = _POOLS.pop(key)
    executor.shutdown(wait=kill, kill_workers=kill)


class LokyPool:
    """A pool of ``workers`` loky processes (joblib's), replaced after a crash; each worker
    imports ``modules`` when it starts.  Pools are kept between the sweeps of a process
    (:data:`KEPT_POOLS`, keyed by the worker count and ``code``, the parent's identity of
    the code the workers run): a sweep whose ``modules`` the live workers of its key
    imported already reuses them; otherwise they are replaced by workers that import the
    modules of both, so no worker outlives a change of code and a pool serves one
    isolation group only."""

    crashes: tuple[type[BaseException], ...] = (BrokenProcessPool,)

    def __init__(self, workers: int, modules: Sequence[str] = (), code: str = "") -> None:
        self.workers, self.modules, self.code = workers, tuple(modules), code
        self._executor: Any = None

    @property
    def _key(self) -> tuple[int, str]:
        return self.workers, self.code

    def _get(self) -> Any:
        if self._executor is None:
            self._executor = self._kept() or self._start()
        return self._executor

    def _kept(self) -> Any:
        """The live pool of this key, if its workers imported ``modules`` already."""
        executor, imported = _POOLS.get(self._key, (None, ()))
        if executor is None or not set(self.modules) <= set(imported) or not _usable(executor):
            return None
        _POOLS.move_to_end(self._key)
        return executor

    def _start(self) -> Any:
        from joblib.externals.loky import ProcessPoolExecutor

        modules = tuple(sorted(set(_POOLS.get(self._key, (None, ()))[1]) | set(self.modules)))
        if self._key in _POOLS:
            _drop_pool(self._key, kill=False)
        while len(_POOLS) >= KEPT_POOLS:
            _drop_pool(next(iter(_POOLS)), kill=False)
        executor = ProcessPoolExecutor(
            max_workers=self.workers,
            initializer=_init_worker,
            initargs=(os.getpid(), modules, self.code),
            timeout=60,
        )
        _POOLS[self._key] = (executor, modules)
        # Started workers before the first unit, so that a unit's time since
        # submission is its running time, not a worker's start-up.
        list(executor.map(_ready, range(self.workers)))
        return executor

    def submit(self, task: Task) -> Future:
        return self._get().submit(task.function, task.items, *task.arguments)

    def wait(self, futures: Sequence[Future], timeout: float) -> set[Future]:
        return set(wait_futures(futures, timeout=timeout, return_when=FIRST_COMPLETED).done)

    def kill(self) -> None:
        if self._executor is not None:
            if _POOLS.get(self._key, (None,))[0] is self._executor:
                _drop_pool(self._key, kill=True)
            else:
                self._executor.shutdown(wait=True, kill_workers=True)
            self._executor = None


class DaskPool:
    """The Dask cluster of ``client``: one future per task, on its worker threads."""

    crashes: tuple[type[BaseException], ...] = ()

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, task: Task) -> Any:
        return self.client.submit(task.function, task.items, *task.arguments, pure=False)

    def wait(self, futures: Sequence[Any], timeout: float) -> set[Any]:
        from distributed import wait

        try:
            return set(wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return set()

    def kill(self) -> None:
        """Nothing to kill: a Dask worker thread cannot be stopped from outside."""


class CtrlC:
    """While active (a context manager, in the main thread), SIGINT raises KeyboardInterrupt
    as usual and is also remembered, so that :meth:`check` raises it again if the first one
    was swallowed; elsewhere (another thread) it does nothing."""

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


@dataclass
class Supervisor:
    """Run tasks on ``pool`` with ``workers`` in flight; report each item's end once.

    ``on_done(items, results)`` for items whose worker finished them (they wrote their unit
    files): ``results`` is the task's return value, one per item, or ``None`` where only
    ``progress`` knows they finished (their files hold the results); ``on_failed(item,
    cause)`` when the supervisor must record a unit itself.
    """

    pool: Pool
    workers: int
    timeout: float | None
    on_done: Callable[[tuple[Any, ...], Sequence[Any] | None], None]
    on_failed: Callable[[Any, str], None]
    progress: Progress = no_progress
    pending: deque[Task] = field(default_factory=deque)
    suspects: deque[Task] = field(default_factory=deque)
    inflight: dict[Any, Task] = field(default_factory=dict)

    def run(self, tasks: Sequence[Task]) -> None:
        """Run every task to an end; on KeyboardInterrupt kill the workers and re-raise.

        Ctrl-C is noted by a handler of this loop's own (:class:`CtrlC`) as well as raised:
        a KeyboardInterrupt that lands inside an object's finaliser is swallowed by Python
        ("Exception ignored in ..."), and the sweep would then run to its end; the note
        makes the loop raise it at its next poll instead.
        """
        self.pending.extend(tasks)
        with CtrlC() as ctrl_c:
            self._run(ctrl_c)

    def _run(self, ctrl_c: CtrlC) -> None:
        try:
            while self.pending or self.suspects or self.inflight:
                ctrl_c.check()
                self._fill()
                done = self.pool.wait(list(self.inflight), POLL_SECONDS)
                for future in done:
                    if future in self.inflight:
                        self._finish(future)
                self._enforce_hard_limit()
        except BaseException:
            self.pool.kill()
            raise

    def _fill(self) -> None:
        """Submit tasks: suspects one at a time and alone, others up to ``workers``."""
        if self.suspects:
            if not self.inflight:
                self._submit(self.suspects.popleft())
            return
        while self.pending and len(self.inflight) < self.workers:
            self._submit(self.pending.popleft())

    def _submit(self, task: Task) -> None:
        future = self.pool.submit(task)  # may first start the pool's workers: not the unit's time
        task.started = time.time()
        self.inflight[future] = task

    def _finish(self, future: Any) -> None:
        task = self.inflight.pop(future)
        try:
            results = future.result()
        except self.pool.crashes as err:
            self._crashed(task, err)
            return
        except Exception as err:  # the worker could not run the rest of the task: record it
            for item in self._settle(task).items:
                self.on_failed(item, f"worker error: {type(err).__name__}: {err}")
            return
        self.on_done(task.items, results)

    def _settle(self, task: Task, progress: tuple[int, float] | None = None) -> Task:
        """Report the items of ``task`` that finished before it stopped (as ``progress``,
        or :attr:`progress` now, says); return the rest."""
        finished, _ = self.progress(task) if progress is None else progress
        if finished:
            self.on_done(task.items[:finished], None)
        return task.rest(finished)

    def _crashed(self, task: Task, err: BaseException) -> None:
        """A worker died: the culprit is known if a task of one unit was alone in flight;
        otherwise the first unfinished unit of each task in flight becomes a suspect, to be
        rerun alone, and the units after it go back to the queue."""
        alone = not self.inflight and len(task.items) == 1
        stopped = [self._settle(t) for t in (task, *self.inflight.values())]
        self.inflight.clear()
        self.pool.kill()
        if alone and stopped[0].items:
            self.on_failed(stopped[0].items[0], f"worker died ({_death_cause(err)})")
            return
        self._suspect([t for t in stopped if t.items])

    def _suspect(self, stopped: Sequence[Task]) -> None:
        """Rerun the first unit of each of ``stopped`` alone, and queue the others again.

        The first unit a task has not finished need not be the one that was running: the
        unit file of a finished unit may still be on its way to the disk
        (:class:`experiments.base.atomic_files.BackgroundSync`).  A unit is blamed for its
        worker only once it ran alone.
        """
        for rest in reversed(stopped):
            if len(rest.items) > 1:
                self.pending.appendleft(rest.rest(1))
        self.suspects.extend(Task(t.items[:1], t.function, t.arguments) for t in stopped)

    def _enforce_hard_limit(self) -> None:
        """Kill the pool when a unit has run ``timeout + HARD_LIMIT_GRACE`` seconds (since
        its task started or its task's previous unit finished): record it as timed out if
        it was its task's only unit, else rerun it alone; keep the finished units and queue
        the others."""
        if self.timeout is None:
            return
        limit = self.timeout + HARD_LIMIT_GRACE
        now = time.time()
        if all(now - task.started <= limit for task in self.inflight.values()):
            return
        progress = {future: self.progress(task) for future, task in self.inflight.items()}
        late = {
            future
            for future, task in self.inflight.items()
            if now - max(task.started, progress[future][1]) > limit
        }
        if not late:
            return
        self.pool.kill()
        stopped = {f: self._settle(task, progress[f]) for f, task in self.inflight.items()}
        singles = {f for f, task in self.inflight.items() if len(task.items) == 1}
        self.inflight.clear()
        suspects = []
        for future, rest in reversed(stopped.items()):
            if not rest.items:
                continue
            if future not in late:
                self.pending.appendleft(rest)
            elif future in singles:
                self.on_failed(
                    rest.items[0],
                    f"timed out: the unit took longer than timeout = {self.timeout:g} s "
                    "and its worker was killed",
                )
            else:
                suspects.append(rest)
        self._suspect(suspects[::-1])


def _death_cause(err: BaseException) -> str:
    """The exit codes loky reports for a dead worker (``EXIT(4)``, ``SIGSEGV(-11)``), or
    the error itself."""
    text = " ".join(str(err).split())
    codes = re.search(r"exit codes of the workers are \{([^}]*)\}", text)
    return f"exit code {codes.group(1)}" if codes else f"{type(err).__name__}: {text}"
