"""The input boundary: every file voicebudget reads goes through here.

One low module (it imports nothing else of the package but the errors) so that the scenario loader,
the council loader, the tuner and the trace readers share one set of rules:

- **size cap**: a file larger than the cap is refused with a message naming the file and the cap;
  devices (``/dev/zero``) and folders are refused; pipes are read up to the cap;
- **text**: UTF-8, a leading byte-order mark is dropped; lines are split on ``\\n`` only (a trailing
  ``\\r`` is dropped), never on U+2028 or form feeds as :meth:`str.splitlines` would;
- **JSON**: nesting deeper than :data:`MAX_NESTING` and integers longer than Python's 4,300-digit
  conversion limit are input errors naming the file and line, not ``RecursionError``/``ValueError``;
- **numbers**: an integer beyond the float range (over ~1.8e308, e.g. 310 digits) reads as ``inf`` (or
  ``-inf``) in JSON, YAML and TOML alike, as ``1e400`` already does: later checks then see one kind of
  too-large number (a field's "finite number" check, a trace reader's "not finite" flag), and no
  conversion to float further in can overflow (:func:`finite_int`);
- **YAML**: a safe loader where a key given twice is an error, merge keys (``<<``) work, a key must be
  a scalar, and alias expansion is counted on the node graph before anything is built, so a
  billion-laughs document of a few hundred bytes is refused at once (:data:`MAX_YAML_ALIAS_NODES`);
- **TOML**: the same nesting limit;
- **CSV**: ``\r\n``, ``\n`` and a lone ``\r`` each end a row, as Python's :mod:`csv` and spreadsheets
  read them (a ``\r`` inside a quoted cell stays in the cell); a malformed row (a cell over the
  :mod:`csv` field limit) is an input error naming the line (:func:`csv_rows`).

Every failure is a :class:`~voicebudget.ScenarioError` whose message names the file (and the line
where known) and never quotes the file's content.
"""

from __future__ import annotations

import csv
import errno
import io
import math
import os
import re
import signal
import stat
import threading
import tomllib
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from voicebudget._errors import ScenarioError, param
from voicebudget._text import unknown

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_DOCUMENT_BYTES",
    "MAX_NESTING",
    "MAX_TRACE_BYTES",
    "MAX_YAML_ALIAS_NODES",
    "Roots",
    "iter_lines",
    "load_toml",
    "load_yaml",
    "parse_json",
    "read_bytes",
    "read_document",
    "check_target",
    "csv_rows",
    "finite_int",
    "read_text",
    "reference_context",
    "write_atomic",
    "resolve_reference",
    "split_lines",
    "validation_error",
]

MAX_DOCUMENT_BYTES = 16 * 2**20
"""Largest scenario, council or tuning file read (16 MiB; the bundled ones are a few KB)."""
MAX_DATA_BYTES = 256 * 2**20
"""Largest empirical samples file (CSV/JSON) read (256 MiB: tens of millions of samples)."""
MAX_TRACE_BYTES = 4 * 2**30
"""Largest trace file read (4 GiB; a million LiveKit turns is about 1.4 GB)."""
MAX_NESTING = 100
"""Deepest nesting of lists/tables accepted in JSON, YAML and TOML (real documents stay under 20)."""
MAX_YAML_ALIAS_NODES = 100_000
"""Most nodes that YAML aliases may add when expanded (a billion-laughs document adds 10^8 and more)."""

_BOM = "\ufeff"
_FLOAT_MAX = 1.7976931348623157e308
_LONG_INT = re.compile(r"\d{309}")  # the shortest integer beyond the float range has 309 digits
_LONG_TOML_INT = re.compile(r"[0-9A-Fa-f_]{256}")  # ... and 257 in hexadecimal (TOML: 0x, 0o, 0b, 1_000)


def finite_int(value: int) -> int | float:
    """``value``, or ``inf``/``-inf`` when it is beyond the float range (what ``float(value)`` would
    round it to, had it not raised ``OverflowError``)."""
    if -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return value
    return math.inf if value > 0 else -math.inf


def _json_int(text: str) -> int | float:
    return finite_int(int(text))


def _finite_ints(doc: Any) -> Any:
    """``doc`` (a parsed TOML document) with every integer beyond the float range as ``inf``/``-inf``."""
    if isinstance(doc, bool):
        return doc
    if isinstance(doc, int):
        return finite_int(doc)
    if isinstance(doc, dict):
        return {k: _finite_ints(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_finite_ints(v) for v in doc]
    return doc


_LINE_CHUNK = 1 << 20
"""Bytes :func:`iter_lines` reads and decodes at a time."""
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


def _decode(data: bytes, origin: str, errors: str) -> str:
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
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
    whatever the file's size (for JSON-lines and log readers). The file is read and decoded a chunk at a
    time, never line by line: decoding ``\n``-ended runs of lines gives what decoding each line does
    (``\n`` is never part of a multi-byte UTF-8 sequence), at a fraction of the cost.

    :raises ScenarioError: see :func:`read_bytes` (the size is checked first, and again while reading
        a pipe); invalid UTF-8 when ``errors="strict"``, naming the line.
    """
    path = Path(path)
    origin = str(path)
    fd = _open_checked(path, max_bytes)
    size = done = 0  # bytes read; lines yielded
    tail = b""
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_LINE_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise ScenarioError(f"input is over the {_mib(max_bytes)} limit for this kind of input", origin=origin)
            cut = chunk.rfind(b"\n")
            if cut < 0:
                tail += chunk
                continue
            lines = _decode_lines(tail + chunk[: cut + 1], done, origin, errors)
            tail = chunk[cut + 1 :]
            yield from enumerate(lines, start=done + 1)
            done += len(lines)
    if tail:
        yield from enumerate(_decode_lines(tail + b"\n", done, origin, errors), start=done + 1)


def _decode_lines(data: bytes, done: int, origin: str, errors: str) -> list[str]:
    """The lines of ``data`` (whole lines, each ended by ``\n``), after ``done`` lines of the file."""
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        lineno = done + data.count(b"\n", 0, exc.start) + 1
        raise ScenarioError(
            f"not UTF-8 text (byte {exc.start - start} of the line)", origin=origin, field=f"line {lineno}"
        ) from None
    if done == 0:
        text = text.removeprefix(_BOM)
    lines = text.split("\n")
    lines.pop()  # the text ends with "\n"
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


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


def csv_rows(text: str, *, origin: str) -> Iterator[tuple[int, list[str]]]:
    """The rows of a CSV text as ``(line number of the row's first line, cells)``.

    ``\r\n``, ``\n`` and a lone ``\r`` each end a line (old Mac files, a stray ``\r`` from an editor), as
    :mod:`csv` reads a file opened with ``newline=""``; a quoted cell may hold line ends. Lines are
    numbered as a text editor does, from 1.

    :raises ScenarioError: a row :mod:`csv` cannot read (a cell longer than its field limit of
        131,072 characters), naming the line; never the content.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ScenarioError(
                f"cannot read the CSV row: {_short(exc)}", origin=origin, field=f"line {start}"
            ) from None
        yield start, row
        start = reader.line_num + 1


# --- JSON -------------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings are not counted).

    Linear time; cheap when the text has few brackets.
    """
    opened = text.count("[") + text.count("{")
    if opened <= MAX_NESTING:
        return opened
    import numpy as np

    bare = _JSON_STRING.sub("", text).encode("utf-8", errors="replace")
    codes = np.frombuffer(bare, dtype=np.uint8)
    step = ((codes == ord("[")) | (codes == ord("{"))).astype(np.int32)
    step -= ((codes == ord("]")) | (codes == ord("}"))).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows here")


def parse_json(text: str, *, origin: str, line: int | None = None, allow_nan: bool = True) -> Any:
    """Parse a JSON text with the input limits.

    :param origin: the file, for messages.
    :param line: the line number when ``text`` is one line of a JSON-lines file (messages give it);
        otherwise messages give the line of the syntax error.
    :param allow_nan: whether ``NaN``/``Infinity`` literals are accepted (a reader may flag them).
    :raises ScenarioError: a syntax error, nesting deeper than :data:`MAX_NESTING`, or an integer of
        more than 4,300 digits; the message names the file and line.
    """
    where = f"line {line}" if line is not None else ""
    if json_depth(text) > MAX_NESTING:
        raise ScenarioError(f"JSON nested deeper than {MAX_NESTING} levels; refused", origin=origin, field=where)
    import json

    parse_int = _json_int if _LONG_INT.search(text) else None
    try:
        if allow_nan:
            return json.loads(text, parse_int=parse_int)
        return json.loads(text, parse_constant=_refuse_constant, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        field = where or f"line {exc.lineno}"
        raise ScenarioError(f"cannot parse JSON: {exc.msg} (column {exc.colno})", origin=origin, field=field) from None
    except RecursionError:
        raise ScenarioError(
            f"JSON nested deeper than {MAX_NESTING} levels; refused", origin=origin, field=where
        ) from None
    except ValueError as exc:  # int digit limit, refused constants
        raise ScenarioError(f"cannot parse JSON: {_short(exc)}", origin=origin, field=where) from None


def _short(exc: BaseException) -> str:
    message = str(exc).split(";")[0]
    if "integer string conversion" in message:
        return "an integer longer than 4,300 digits"
    return message[:200]


# --- YAML -------------------------------------------------------------------------------------------

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the input rules: alias expansion counted before construction, a key
    given twice in one mapping is an error (as in TOML), a key must be hashable, merge keys work."""

    definitions: frozenset[str] = frozenset()

    def compose_document(self) -> yaml.Node | None:
        # PyYAML's, except that the anchored nodes are remembered (top-level definitions, see below)
        self.get_event()  # type: ignore[no-untyped-call]  # DOCUMENT-START
        node = self.compose_node(None, None)  # type: ignore[arg-type]
        self.get_event()  # type: ignore[no-untyped-call]  # DOCUMENT-END
        anchored = {id(n) for n in self.anchors.values()}
        self.anchors = {}
        if isinstance(node, yaml.MappingNode):
            self.definitions = frozenset(
                str(k.value) for k, v in node.value if isinstance(k, yaml.ScalarNode) and id(v) in anchored
            )
        return node

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable) or isinstance(key, list | dict):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a mapping key must be a string or number, not a {type(key).__name__}",
                    key_node.start_mark,
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {str(key)[:80]!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_REFUSED_TAGS = ("binary", "set", "omap", "pairs")
"""YAML's tags for types a voicebudget file has no use for: ``!!binary`` (bytes, which pydantic would take
as text), ``!!set`` (unordered), ``!!omap`` and ``!!pairs`` (lists of pairs posing as tables)."""


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not allowed: a voicebudget file holds text, "
        "numbers, booleans, lists and tables",
        node.start_mark,
    )


for _tag in _REFUSED_TAGS:
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    return finite_int(loader.construct_yaml_int(node))


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases would expand past :data:`MAX_YAML_ALIAS_NODES` added nodes, refer
    to themselves, or nest deeper than :data:`MAX_NESTING`; counted on the node graph (memoised, so a
    bomb costs as much as its text)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            depths[key] = 1 + max((depths[id(c)] for c in children), default=0)
            active.discard(key)
            if depths[key] > MAX_NESTING:
                raise yaml.constructor.ConstructorError(
                    None, None, f"nested deeper than {MAX_NESTING} levels", node.start_mark
                )
            continue
        if key in sizes:
            continue
        active.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in active:
                raise yaml.constructor.ConstructorError(
                    None, None, "an alias refers to its own parent (recursive)", child.start_mark
                )
            if id(child) not in sizes:
                stack.append((child, False))
    added = sizes[id(root)] - len(sizes)
    if added > MAX_YAML_ALIAS_NODES:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"aliases expand to {sizes[id(root)]:,} nodes (the document has {len(sizes):,}); "
            f"at most {MAX_YAML_ALIAS_NODES:,} added nodes are allowed",
            root.start_mark,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_yaml(text: str, *, origin: str) -> Any:
    """Parse YAML with the safe loader and the input rules above.

    :raises ScenarioError: a syntax error, a duplicate or non-scalar key, a recursive alias, too many
        alias expansions or too deep nesting; the message names the file and line.
    """
    return _load_yaml(text, origin)[0]


def compose_yaml(text: str, *, origin: str) -> yaml.Node | None:
    """The YAML document's node graph (with each node's position), under the same limits as loading.

    :raises ScenarioError: as :func:`load_yaml`.
    """
    loader = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(node)
        return node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        field = f"line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"cannot parse YAML: {(exc.problem or '')[:300]}", origin=origin, field=field) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"cannot parse YAML: {str(exc)[:300]}", origin=origin) from None
    except RecursionError:
        raise ScenarioError(f"YAML nested deeper than {MAX_NESTING} levels; refused", origin=origin) from None
    finally:
        if loader is not None:
            loader.dispose()


def _load_yaml(text: str, origin: str) -> tuple[Any, frozenset[str]]:
    """The document and its top-level keys whose value carries an anchor (``base: &b {...}``)."""
    loader = None
    try:
        loader = _Loader(text)  # the reader refuses control characters here already
        return loader.get_single_data(), loader.definitions
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        field = f"line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(p for p in (exc.context, exc.problem) if p)[:300]
        if "'\\t'" in problem:  # PyYAML: "found character '\t' that cannot start any token"
            problem += "; YAML indents with spaces, not tabs: use spaces"
        raise ScenarioError(f"cannot parse YAML: {problem}", origin=origin, field=field) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"cannot parse YAML: {str(exc)[:300]}", origin=origin) from None
    except RecursionError:
        raise ScenarioError(f"YAML nested deeper than {MAX_NESTING} levels; refused", origin=origin) from None
    finally:
        if loader is not None:
            loader.dispose()


# --- TOML -------------------------------------------------------------------------------------------


def load_toml(text: str, *, origin: str) -> dict[str, Any]:
    """Parse TOML with the nesting limit.

    :raises ScenarioError: a syntax error (naming the line), nesting deeper than :data:`MAX_NESTING`,
        or an integer longer than 4,300 digits.
    """
    if text.count("[") + text.count("{") > MAX_NESTING and _toml_depth(text) > MAX_NESTING:
        raise ScenarioError(f"TOML nested deeper than {MAX_NESTING} levels; refused", origin=origin)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"cannot parse TOML: {exc}", origin=origin) from None
    except RecursionError:
        raise ScenarioError(f"TOML nested deeper than {MAX_NESTING} levels; refused", origin=origin) from None
    except ValueError as exc:
        raise ScenarioError(f"cannot parse TOML: {_short(exc)}", origin=origin) from None
    return _finite_ints(data) if _LONG_TOML_INT.search(text) else data


def _toml_depth(text: str) -> int:
    """Upper bound of inline nesting (brackets and braces outside basic/literal strings and comments)."""
    bare = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', "", text)
    depth = best = 0
    for ch in bare:
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return best


# --- file references --------------------------------------------------------------------------------

Roots = Sequence[str | os.PathLike[str]]
"""Folders that ``file`` references may read from (``allowed_roots=`` of the loaders)."""

MAX_REFERENCE_DEPTH = 16
"""Most files one document may pull in through a chain of ``file`` references."""


def reference_context(
    path: str | Path,
    *,
    allowed_roots: Roots = (),
    parent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The pydantic validation context for a document read from ``path``, for its ``file`` references.

    A reference resolves against the document's folder (``base_dir``) and must land, after following
    symbolic links, under one of the roots: the top-level document's folder, the current working
    directory (the project the command runs in) and ``allowed_roots``. A document pulled in by a
    reference keeps its parent's roots and extends the chain of files being read (cycles are caught).

    :param parent: the referencing document's context (None for a top-level document).
    """
    path = Path(path)
    real = path.resolve()
    if parent is not None and parent.get("roots"):
        roots: tuple[Path, ...] = tuple(parent["roots"])
        chain: tuple[Path, ...] = (*parent.get("chain", ()), real)
    else:
        extra = tuple(Path(r).resolve() for r in allowed_roots)
        roots = tuple(dict.fromkeys((real.parent, Path.cwd().resolve(), *extra)))
        chain = (real,)
    return {"base_dir": str(path.parent), "roots": roots, "chain": chain}


def resolve_reference(file: object, context: Mapping[str, Any] | None) -> Path:
    """Resolve a ``file`` field against the referencing document's folder, inside the allowed roots.

    Without roots in the context (a model built in code) only the folder is applied.

    :raises ValueError: (inside a pydantic validator) the file is not a regular file (a FIFO would block
        ``open`` forever, a device never ends), or is outside every allowed root; the
        message names the reference and the roots, never the file's content.
    """
    ctx = context or {}
    base = Path(ctx.get("base_dir", "."))
    ref = Path(str(file))
    path = ref if ref.is_absolute() else base / ref
    roots: tuple[Path, ...] = tuple(ctx.get("roots", ()))
    if roots:
        real = path.resolve()
        if not any(real.is_relative_to(root) for root in roots):
            raise ValueError(
                f"file {str(file)[:200]!r} is outside the folders a file may reference "
                f"({', '.join(str(r) for r in roots)}); allow its folder with "
                + param("allowed_roots", "allowed_roots=[folder]")
            )
    try:
        mode = path.stat().st_mode
    except OSError:
        return path  # missing or unreadable: the reader says which
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"file {str(file)[:200]!r} is {_kind(mode)}, not a regular file; a file reference must name one"
        )
    return path


def check_cycle(path: Path, context: Mapping[str, Any] | None) -> None:
    """Refuse reading ``path`` when it is already being read higher up the chain of references.

    :raises ScenarioError: a cycle (the message lists the files in order), or a chain longer than
        :data:`MAX_REFERENCE_DEPTH`.
    """
    chain: tuple[Path, ...] = tuple((context or {}).get("chain", ()))
    real = path.resolve()
    if real in chain:
        loop = [*chain[chain.index(real) :], real]
        raise ScenarioError(
            "files reference each other in a cycle: " + " -> ".join(str(p) for p in loop), origin=str(path)
        )
    if len(chain) >= MAX_REFERENCE_DEPTH:
        raise ScenarioError(f"more than {MAX_REFERENCE_DEPTH} files deep in file references", origin=str(path))


# --- writing ----------------------------------------------------------------------------------------


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
        try:
            same = Path(item).exists() and path.exists() and os.path.samefile(path, item)
        except OSError:
            same = False
        if same or Path(item).resolve() == path.resolve():
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


# --- documents --------------------------------------------------------------------------------------

DOCUMENT_SUFFIXES = (".toml", ".yaml", ".yml")
"""File types of scenario, council and tuning files."""


def read_document(
    path: str | Path,
    *,
    fields: Collection[str] | None = None,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    regular_only: bool = False,
) -> dict[str, Any]:
    """Read a TOML or YAML file (by its suffix) into a dict, with the input limits.

    :param fields: the document's known top-level fields. A YAML top-level entry whose value carries
        an anchor and whose key is not one of them (``base: &b {kind: fixed, value_ms: 1}``) is a
        definition for aliases and merge keys elsewhere, and is dropped.
    :raises ScenarioError: missing file, unknown suffix, over the size cap, not UTF-8, syntax error,
        limits exceeded, or not a table at the top; with ``regular_only`` (a ``file = ...`` reference),
        anything but a regular file.
    """
    path = Path(path)
    origin = str(path)
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        if not path.exists():
            raise ScenarioError("file not found", origin=origin)
        if path.is_dir():
            raise ScenarioError(
                f"is a folder, not a file; give a {', '.join(DOCUMENT_SUFFIXES)} file in it", origin=origin
            )
        raise ScenarioError(f"unknown file type {suffix!r}; allowed: {', '.join(DOCUMENT_SUFFIXES)}", origin=origin)
    text = read_text(path, max_bytes=max_bytes, regular_only=regular_only)
    definitions: frozenset[str] = frozenset()
    if suffix == ".toml":
        data: Any = load_toml(text, origin=origin)
    else:
        data, definitions = _load_yaml(text, origin)
    if not isinstance(data, dict):
        raise ScenarioError("expected a table (mapping) at the top level", origin=origin)
    if fields is not None and definitions:
        data = {k: v for k, v in data.items() if not (k in definitions and k not in fields)}
    return dict(data)


def validation_error(
    exc: ValidationError,
    origin: str,
    doc: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    schema: Mapping[str, Any] | None = None,
) -> ScenarioError:
    """Turn a pydantic error into a :class:`ScenarioError` with user-facing field paths.

    Pydantic's internal location parts (union tags, validator wrappers) are dropped by walking the
    document along the location; errors inside a merged variant (``overrides``: variant name -> its
    override table) point at the variant's override when the field came from it.

    :param schema: the validated model's JSON schema; an unknown field in a table with a ``kind`` then
        lists the fields that kind allows.
    """
    errors = []
    for err in exc.errors():
        path = _user_path(doc, err["loc"])
        if overrides and len(path) >= 2 and path[0] == "variants":
            rest = path[2:]
            if _from_override(overrides.get(str(path[1]), {}), rest):
                path = ["variants", path[1], *rest]
            else:
                path = ["pipeline", *rest]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown field {str(path[-1])[:80]!r}" + _allowed_fields(doc, path[:-1], schema)
        elif err["type"] == "missing":
            message = "required field missing"
        elif err["type"] == "union_tag_invalid":  # an unknown kind: the closest known one, then all
            ctx = err.get("ctx", {})
            known = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
            message = unknown(str(ctx.get("discriminator", "kind")).strip("'"), ctx.get("tag", ""), known)
        errors.append((".".join(str(p) for p in path), message))
    return ScenarioError.from_errors(origin, errors)


def _user_path(doc: Any, loc: tuple[int | str, ...]) -> list[int | str]:
    path: list[int | str] = []
    node = doc
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        elif isinstance(node, dict) and isinstance(part, str) and "[" not in part and part not in _WRAPPER_PARTS:
            if node.get("kind") == part:
                continue  # union tag
            path.append(part)
            node = None
    return path


_WRAPPER_PARTS = frozenset({"function-after", "function-before", "function-wrap"})


def _from_override(override: Any, path: list[int | str]) -> bool:
    """Whether the field at ``path`` of a merged variant came from the variant's override: the override
    has the path, or replaced a table above it (a table with ``kind`` replaces the baseline's)."""
    node = override
    for part in path:
        if isinstance(node, dict) and "kind" in node:
            return True
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def _allowed_fields(doc: Any, parent: list[int | str], schema: Mapping[str, Any] | None) -> str:
    node = doc
    for part in parent:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            node = node[part]
        else:
            node = None
    if schema is None or not isinstance(node, dict) or "kind" not in node:
        return ""
    for definition in schema.get("$defs", {}).values():
        kind = definition.get("properties", {}).get("kind", {})
        if kind.get("const") == node["kind"] or kind.get("default") == node["kind"]:
            return f"; allowed for kind {str(node['kind'])[:40]!r}: {', '.join(definition['properties'])}"
    return ""
