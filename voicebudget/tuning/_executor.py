"""Mapping an evaluation over configurations: in process, on local processes, or on Dask.

The function mapped must be a picklable top-level callable. Results come back in input order.
An exception inside an evaluation is not swallowed: it is collected with the configuration that
raised it, so the caller reports it as an error (never as "infeasible").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from voicebudget._errors import ScenarioError, param

__all__ = ["MAX_WORKERS", "EvaluationFailure", "Outcome", "batch_size_for", "map_evaluations"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class EvaluationFailure:
    """An evaluation that raised: the configuration index and the error's type and message."""

    index: int
    error: str


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """The result of one evaluation, or its failure."""

    index: int
    value: R | None
    failure: EvaluationFailure | None = None


def _safe_batch(fn: Callable[[Any], Any], batch: Sequence[tuple[int, Any]]) -> list[Outcome[Any]]:
    out: list[Outcome[Any]] = []
    for index, item in batch:
        try:
            out.append(Outcome(index, fn(item)))
        except Exception as exc:  # noqa: BLE001 - reported to the caller as a failure, not swallowed
            out.append(Outcome(index, None, EvaluationFailure(index, f"{type(exc).__name__}: {exc}")))
    return out


def _batches(items: Sequence[T], size: int) -> Iterator[list[tuple[int, T]]]:
    for start in range(0, len(items), size):
        yield [(start + j, x) for j, x in enumerate(items[start : start + size])]


MAX_WORKERS = 256
"""Local worker processes at most: one process each, and more than the cores only wait on them (a
typo like ``--workers 100000`` would otherwise start processes until the machine stalls)."""

CONNECT_TIMEOUT_S = 10
"""How long to wait for a Dask scheduler before giving up, seconds."""

_WORKER_FN: Callable[[Any], Any] | None = None
"""The evaluation function of a worker process, set once by :func:`_init_worker` (not per task)."""


def _init_worker(fn: Callable[[Any], Any]) -> None:
    global _WORKER_FN
    _WORKER_FN = fn


def _worker_batch(batch: Sequence[tuple[int, Any]]) -> list[Outcome[Any]]:
    assert _WORKER_FN is not None, "worker not initialised"
    return _safe_batch(_WORKER_FN, batch)


MAX_BATCH = 128
"""Items per task at most: large enough to amortise a task's scheduling and pickling (~1 ms)."""


def batch_size_for(n_items: int, workers: int) -> int:
    """Items per task: at most :data:`MAX_BATCH`, and small enough that every worker gets about four
    tasks (so a short list, such as the tuner's re-run shortlist of ~70 configurations, is still
    shared out, and the last, uneven tasks do not leave a worker idle for long)."""
    if workers <= 1:
        return MAX_BATCH
    return max(1, min(MAX_BATCH, -(-n_items // (4 * workers))))


def map_evaluations(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: int = 1,
    scheduler: Any = None,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Outcome[R]]:
    """Evaluate ``fn`` on every item, in input order.

    :param workers: 1: in this process; > 1: a local process pool of that size (``fn`` is sent to
        each worker once, at start-up).
    :param scheduler: a Dask scheduler address (``tcp://host:8786``), or a ``distributed.Client``;
        overrides ``workers``. ``fn`` is scattered to the cluster once.
    :param batch_size: items per task (amortises scheduling); default :func:`batch_size_for`.
    :param progress: called with the number of items just finished.
    :returns: one :class:`Outcome` per item.
    :raises ValueError: ``workers`` outside ``1..MAX_WORKERS``.
    """
    if not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be in 1..{MAX_WORKERS}, got {workers}")
    parallel = 1 if scheduler is None else 8
    size = batch_size if batch_size is not None else batch_size_for(len(items), max(workers, parallel))
    batches = list(_batches(items, size))
    results: list[Outcome[R]] = []
    if scheduler is not None:
        results = _dask_map(fn, batches, scheduler, progress)
    elif workers == 1 or len(batches) == 1:
        for batch in batches:
            results.extend(_safe_batch(fn, batch))
            if progress:
                progress(len(batch))
    else:
        # lazy: multiprocessing costs ~30 ms of start-up, and the CLI reads MAX_WORKERS for every command
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(fn,)) as pool:
            for batch_out in pool.map(_worker_batch, batches):
                results.extend(batch_out)
                if progress:
                    progress(len(batch_out))
    return sorted(results, key=lambda o: o.index)


SCHEDULER_SCHEMES = ("tcp",)
"""Dask scheduler address schemes a ``scheduler`` address may have (TLS and UCX need a security or transport
configuration that voicebudget does not take: tunnel to a ``tcp://`` address instead)."""

_ADDRESS = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})"
)


def check_scheduler_address(address: str) -> str:
    """Check a Dask scheduler address before connecting: ``tcp://HOST:PORT`` (or ``HOST:PORT``).

    :returns: the address with its scheme (``tcp://`` when none was given).
    :raises ScenarioError: (origin the ``scheduler`` parameter) not an address, an unsupported scheme (the message
        lists :data:`SCHEDULER_SCHEMES`) or a port outside 1..65535.
    """
    match = _ADDRESS.fullmatch(address.strip())
    if match is None:
        raise ScenarioError(
            f"{address[:100]!r} is not a Dask scheduler address; expected tcp://HOST:PORT", origin=param("scheduler")
        )
    scheme = (match["scheme"] or "tcp").lower()
    if scheme not in SCHEDULER_SCHEMES:
        raise ScenarioError(
            f"scheme {scheme}:// is not supported; allowed: {', '.join(s + '://' for s in SCHEDULER_SCHEMES)} "
            "(for a remote scheduler, tunnel to a tcp:// address: Dask deserialises with pickle, so connect "
            "only to schedulers you trust)",
            origin=param("scheduler"),
        )
    if not 1 <= int(match["port"]) <= 65535:
        raise ScenarioError(f"port {match['port']} is outside 1..65535", origin=param("scheduler"))
    return f"{scheme}://{match['host']}:{match['port']}"


def _dask_map(
    fn: Callable[[Any], Any],
    batches: list[list[tuple[int, Any]]],
    scheduler: Any,
    progress: Callable[[int], None] | None,
) -> list[Outcome[Any]]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("a Dask scheduler needs: pip install 'voicebudget[tune]'") from exc
    own_client = not isinstance(scheduler, Client)
    client: Any
    if own_client:
        address = check_scheduler_address(str(scheduler))
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError, ValueError) as exc:  # unreachable, or not an address
            raise ScenarioError(
                f"cannot reach the Dask scheduler at {scheduler!r} within {CONNECT_TIMEOUT_S} s: {exc}",
                origin=param("scheduler"),
            ) from None
        except Exception as exc:  # e.g. a non-Dask endpoint answers garbage (a 3 EiB frame length)
            raise ScenarioError(
                f"{scheduler!r} does not answer as a Dask scheduler ({type(exc).__name__}); is it one?",
                origin=param("scheduler"),
            ) from None
    else:
        client = scheduler
    try:
        remote_fn = client.scatter(fn, broadcast=True)
        futures = [client.submit(_safe_batch, remote_fn, batch, pure=False) for batch in batches]
        out: list[Outcome[Any]] = []
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            batch_out = future.result()
            out.extend(batch_out)
            if progress:
                progress(len(batch_out))
        return out
    finally:
        if own_client:
            client.close()
