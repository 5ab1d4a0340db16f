"""Writing outputs: the target checked before any work, then written all at once."""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from voicebudget._errors import ScenarioError, param


def check_target(
    path: str | Path, *, overwrite: bool = False, inputs: Collection[str | Path] = (), what: str = "output"
) -> Path:
    """Check an output path before any work is done (so a long run does not end in a refused write).

    :param overwrite: whether an existing file may be replaced.
    :param inputs: files the command reads: the target may never be one of them, even with
        ``overwrite`` (``fit t.yaml -o t.yaml`` would destroy its own input).
    :param what: how messages name the target (``"-o"``, ``"--plot"``).
    :raises ScenarioError: the target is an input, exists (without ``overwrite``) or is not a regular
        file, or its folder is missing or not writable.
    """
    path = Path(path)
    origin = f"{what} {path}"
    for item in inputs:
        if _same_file(path, item):
            raise ScenarioError(f"is an input file ({item}); refusing to write over it", origin=origin)
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise ScenarioError("exists and is not a regular file; refusing to replace it", origin=origin)
        if not overwrite:
            raise ScenarioError(f"exists; give {param('overwrite', 'overwrite=True')} to replace it", origin=origin)
    folder = path.parent
    if not folder.is_dir():
        raise ScenarioError(f"folder {folder} does not exist", origin=origin)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ScenarioError(f"folder {folder} is not writable", origin=origin)
    return path


def _same_file(path: Path, item: str | Path) -> bool:
    """``item`` is the file ``path`` names (the same file through another name or link, or the same path)."""
    try:
        same = Path(item).exists() and path.exists() and os.path.samefile(path, item)
    except OSError:
        same = False
    return same or Path(item).resolve() == path.resolve()


def write_atomic(path: str | Path, data: str | bytes | Callable[[Path], object]) -> Path:
    """Write ``path`` all at once: to a hidden temporary file in the same folder (``.NAME.*.tmp``), then
    ``os.replace``.

    A failed or interrupted write leaves the old file (or none), never a truncated one, and removes the
    temporary file: on an error, ``KeyboardInterrupt`` (SIGINT), and SIGTERM or SIGHUP where their
    handler is the default one (the process then ends by that signal, as it would have; called from the
    main thread only, as Python's signal handlers are). SIGKILL cannot be caught: a write killed by it
    leaves its temporary file, which a later write never reuses (each has a fresh random name).

    :param data: text (UTF-8), bytes, or a function that writes the temporary path it is given
        (e.g. ``lambda tmp: fig.savefig(tmp, format="png")``).
    :raises OSError: the folder is not writable or the disk is full (the temporary file is removed); the
        error's ``filename`` is ``path``, not the temporary file.
    """
    path = Path(path)
    made: list[Path] = []  # the temporary file, named before it exists (_create_temporary)
    try:
        with _terminate_raises():
            fd = _create_temporary(path, made)
            _write_then_replace(fd, made[0], path, data)
    except BaseException as exc:
        if made:
            made[0].unlink(missing_ok=True)
        if isinstance(exc, _Terminated):
            os.kill(os.getpid(), exc.signum)  # the default handler is back: the process ends by the signal
        if isinstance(exc, OSError) and (exc.filename is None or (made and str(exc.filename) == str(made[0]))):
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    return path


def _create_temporary(path: Path, made: list[Path]) -> int:
    """Create ``.NAME.*.tmp`` next to ``path`` (a fresh random name, never an existing file) and return its
    descriptor. The name is in ``made`` before the file exists, so a signal at any point after (the instant
    ``open`` returns: a hidden file was left in ~1 of 9 runs) finds it for the caller's cleanup. Blocking
    the signals instead would not do: a process-directed signal goes to any thread not blocking it (numpy's
    are not), and Python runs the handler in the main thread at once."""
    import secrets

    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        made.append(tmp)  # removed with missing_ok: a signal before the file exists removes nothing
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            made.pop()  # another write's file (a 1 in 2^32 collision): not ours to remove
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))  # pragma: no cover - 100 collisions


def _write_then_replace(fd: int, tmp: Path, path: Path, data: str | bytes | Callable[[Path], object]) -> None:
    if callable(data):
        os.close(fd)
        data(tmp)
    else:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
    os.chmod(tmp, path.stat().st_mode & 0o777 if path.is_file() else 0o644)
    os.replace(tmp, path)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived during :func:`write_atomic` (raised by its handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


_CLEANUP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)


@contextmanager
def _terminate_raises() -> Iterator[None]:
    """For the block, SIGTERM and SIGHUP raise :class:`_Terminated` where their handler is the default
    (so ``finally`` and ``except`` clauses run); the default handler is back when the block ends."""
    installed: list[int] = []
    if threading.current_thread() is threading.main_thread():
        for sig in _CLEANUP_SIGNALS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _raise_terminated)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            signal.signal(sig, signal.SIG_DFL)


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated(signum)
