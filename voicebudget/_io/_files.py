"""Reading files: size caps, special files refused, UTF-8 text, lines split on ``\\n`` only."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from voicebudget._errors import ScenarioError
from voicebudget._io._limits import MAX_DOCUMENT_BYTES, MAX_TRACE_BYTES

_BOM = "\ufeff"

_LINE_CHUNK = 1 << 18
"""Bytes :func:`iter_lines` reads and decodes at a time: 256 KiB. Reading a chunk holds ~4 times its size for a
moment (the bytes, the run of whole lines, its text, its lines), which is most of a line reader's peak beyond
its turns with 1 MiB chunks (LiveKit metrics, 20 MB: 4.2 MiB of 24.7); smaller ones cost no measurable time."""
_CHUNK = 1 << 20


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _open_checked(path: Path, max_bytes: int, *, regular_only: bool = False) -> int:
    """Open ``path`` for reading after checking its kind and size; returns the file descriptor.

    The kind is checked again on the open descriptor (a file swapped for another kind between the two
    checks is still seen). With ``regular_only`` the file is opened without blocking (then set back to
    blocking reads), so a FIFO swapped in is refused instead of blocking ``open`` until a writer comes;
    a FIFO given where pipes are allowed (the command line, ``<(cat file)``) waits for its writer, as
    ``cat`` does.

    :param regular_only: refuse pipes too (``file = ...`` references: only regular files).
    :raises ScenarioError: missing, a folder, a device or socket, a pipe when ``regular_only``, or over
        ``max_bytes``.
    """
    origin = str(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ScenarioError("file not found", origin=origin) from None
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", origin=origin) from None
    _check_kind(st, origin, max_bytes, regular_only)
    try:
        nonblocking = getattr(os, "O_NONBLOCK", 0) if regular_only else 0
        fd = os.open(path, os.O_RDONLY | nonblocking | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", origin=origin) from None
    try:
        _check_kind(os.fstat(fd), origin, max_bytes, regular_only)
        if nonblocking:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_kind(st: os.stat_result, origin: str, max_bytes: int, regular_only: bool) -> None:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise ScenarioError("is a folder, not a file", origin=origin)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode) or (regular_only and not stat.S_ISREG(mode)):
        raise ScenarioError(f"is {_kind(mode)}, not a regular file; refused", origin=origin)
    if stat.S_ISREG(mode) and st.st_size > max_bytes:
        raise ScenarioError(
            f"file is {_mib(st.st_size)}, over the {_mib(max_bytes)} limit for this kind of input", origin=origin
        )


def read_bytes(path: str | Path, *, max_bytes: int = MAX_DOCUMENT_BYTES, regular_only: bool = False) -> bytes:
    """Read a whole file, at most ``max_bytes`` (pipes are read in chunks and stopped at the cap).

    :param regular_only: refuse pipes too (for ``file = ...`` references).
    :raises ScenarioError: missing, a folder or device, unreadable, or larger than ``max_bytes``.
    """
    path = Path(path)
    fd = _open_checked(path, max_bytes, regular_only=regular_only)
    chunks: list[bytes] = []
    size = 0
    try:
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode):  # one allocation of the file's size (+1 to see growth), no chunks
                data = fh.read(min(st.st_size, max_bytes) + 1)
                if len(data) > max_bytes:
                    raise ScenarioError(
                        f"input is over the {_mib(max_bytes)} limit for this kind of input", origin=str(path)
                    )
                return data
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise ScenarioError(
                        f"input is over the {_mib(max_bytes)} limit for this kind of input", origin=str(path)
                    )
                chunks.append(chunk)
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", origin=str(path)) from None
    return b"".join(chunks)


_COMPRESSED = (  # magic numbers as the head decodes them (an invalid UTF-8 byte reads as U+FFFD)
    ("\x1f\ufffd", "gzip", "gunzip it (or zcat it into a file)"),
    ("BZh", "bzip2", "bunzip2 it"),
    ("\ufffd7zXZ\x00", "xz", "unxz it"),
    ("(\ufffd/\ufffd", "zstd", "unzstd it"),
    ("PK\x03\x04", "zip", "unzip it"),
)
"""gzip (RFC 1952), bzip2, xz, zstd (RFC 8878) and zip (PKWARE APPNOTE 4.3.7) headers: a log fetched from a log
store often comes compressed (agent.log.gz), and so does a report kept as a build artifact."""


def compressed(head: str) -> str | None:
    """Why a file whose text begins with ``head`` (decoded with invalid UTF-8 replaced) cannot be read as text
    because it is compressed (``is compressed (gzip): gunzip it (or zcat it into a file) first``), or None."""
    for magic, kind, how in _COMPRESSED:
        if head.startswith(magic) and (magic != "BZh" or head[3:4].isdigit()):
            return f"is compressed ({kind}): {how} first"
    return None


def _decode(data: bytes, origin: str, errors: str) -> str:
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        note = compressed(data[:8].decode("utf-8", errors="replace"))
        if note is not None:  # "not UTF-8 text (byte 1 ...)" of a .gz: the trace commands already said this
            raise ScenarioError(f"{note}; voicebudget reads it as text", origin=origin) from None
        line = data.count(b"\n", 0, exc.start) + 1
        raise ScenarioError(
            f"not UTF-8 text (byte {exc.start} cannot be decoded)", origin=origin, field=f"line {line}"
        ) from None
    return text.removeprefix(_BOM)


def read_text(
    path: str | Path, *, max_bytes: int = MAX_DOCUMENT_BYTES, errors: str = "strict", regular_only: bool = False
) -> str:
    """Read a UTF-8 text file (a leading byte-order mark is dropped), at most ``max_bytes``.

    Peak memory is the file's bytes plus its text (the bytes are freed once decoded).

    :param errors: ``"strict"`` (invalid UTF-8 is an error naming the line) or ``"replace"``.
    :param regular_only: refuse pipes too (for ``file = ...`` references).
    :raises ScenarioError: see :func:`read_bytes`; invalid UTF-8 when ``errors="strict"``.
    """
    return _decode(read_bytes(path, max_bytes=max_bytes, regular_only=regular_only), str(path), errors)


def split_lines(text: str) -> list[str]:
    """Split text into lines on ``\\n`` only; a trailing ``\\r`` (CRLF files) is dropped from each line.

    Unlike :meth:`str.splitlines`, U+2028, U+0085 and form feeds inside a JSON string do not split it.
    A final empty line (the text ends with ``\\n``) is not returned.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def iter_lines(
    path: str | Path, *, max_bytes: int = MAX_TRACE_BYTES, errors: str = "replace"
) -> Iterator[tuple[int, str]]:
    """Stream a text file's lines as ``(line number from 1, line)``, split as :func:`split_lines` does.

    Memory stays at one chunk of :data:`_LINE_CHUNK` bytes (or one line, when a line is longer),
    whatever the file's size (for JSON-lines and log readers): the lines of :func:`iter_blocks`.

    :raises ScenarioError: see :func:`iter_blocks`.
    """
    for first, text in iter_blocks(path, max_bytes=max_bytes, errors=errors):
        lines = text.split("\n")
        lines.pop()  # the text ends with "\n"
        if "\r" in text:
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        yield from enumerate(lines, start=first)


def iter_blocks(
    path: str | Path, *, max_bytes: int = MAX_TRACE_BYTES, errors: str = "replace"
) -> Iterator[tuple[int, str]]:
    """Stream a text file as runs of whole lines: ``(number of the run's first line, text)``, each line of the
    text ended by ``\n`` (one is added to a last line without it), a leading byte-order mark dropped, invalid
    UTF-8 replaced (``errors="replace"``); lines are the file's ``\n``-split lines, ``\r`` left in them.

    A reader that looks at text rather than at each line gets it here; :func:`iter_lines` splits it. Memory
    stays at one chunk of :data:`_LINE_CHUNK` bytes (or one line, when a line is longer), whatever the file's
    size. The file is read and decoded a chunk at a time, never line by line: decoding ``\n``-ended runs of
    lines gives what decoding each line does (``\n`` is never part of a multi-byte UTF-8 sequence), at a
    fraction of the cost.

    :raises ScenarioError: see :func:`read_bytes` (the size is checked first, and again while reading
        a pipe); invalid UTF-8 when ``errors="strict"``, naming the line.
    """
    path = Path(path)
    origin = str(path)
    fd = _open_checked(path, max_bytes)
    size = done = 0  # bytes read; lines given
    # The bytes since the last "\n", in pieces: a line longer than a chunk is joined once when it ends (adding
    # each chunk to the bytes so far copied them again every chunk: a 100 MB line took 11.6 s, now 0.5 s).
    tail: list[bytes] = []
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_LINE_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise ScenarioError(f"input is over the {_mib(max_bytes)} limit for this kind of input", origin=origin)
            cut = chunk.rfind(b"\n")
            if cut < 0:
                tail.append(chunk)
                continue
            tail.append(chunk[: cut + 1])
            text = _decode_lines(_take(tail), done, origin, errors)
            if cut + 1 < len(chunk):
                tail.append(chunk[cut + 1 :])
            yield done + 1, text
            done += text.count("\n")
    if tail:
        tail.append(b"\n")
        yield done + 1, _decode_lines(_take(tail), done, origin, errors)


def _take(pieces: list[bytes]) -> bytes:
    """The pieces joined, the list emptied (so a long line's pieces are not held while it is decoded)."""
    data = b"".join(pieces)
    pieces.clear()
    return data


def _decode_lines(data: bytes, done: int, origin: str, errors: str) -> str:
    """The text of ``data`` (whole lines, each ended by ``\n``), after ``done`` lines of the file."""
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        lineno = done + data.count(b"\n", 0, exc.start) + 1
        raise ScenarioError(
            f"not UTF-8 text (byte {exc.start - start} of the line)", origin=origin, field=f"line {lineno}"
        ) from None
    return text.removeprefix(_BOM) if done == 0 else text


def read_head(path: str | Path, max_chars: int, *, max_bytes: int = MAX_TRACE_BYTES) -> tuple[str, bool]:
    """The first ``max_chars`` characters of a text file (leading BOM dropped, invalid UTF-8 replaced),
    and whether the file is a regular file that can be read again. A pipe is not read at all (its
    data would be consumed): ``("", False)``.

    Reads at most ``4 * max_chars + 4`` bytes, whatever the file's size (format detection).

    :raises ScenarioError: see :func:`read_bytes` (missing, a folder, a device, over ``max_bytes``).
    """
    path = Path(path)
    fd = _open_checked(path, max_bytes)
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return "", False
            data = fh.read(4 * max_chars + 4)
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", origin=str(path)) from None
    return data.decode("utf-8", errors="replace").removeprefix(_BOM)[:max_chars], True
