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

The package's modules, by concern: ``_limits`` (the caps), ``_files`` (reading files), ``_parse``
(numbers, CSV, JSON, TOML), ``_yaml`` (imported when a YAML file is read), ``_references``
(``file = ...``), ``_write`` (outputs) and ``_documents`` (scenario-like documents and their validation
errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from voicebudget._io._documents import DOCUMENT_SUFFIXES, read_document, refuse_other_document, validation_error
from voicebudget._io._files import compressed, iter_blocks, iter_lines, read_bytes, read_head, read_text, split_lines
from voicebudget._io._limits import (
    MAX_DATA_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_NESTING,
    MAX_TRACE_BYTES,
    MAX_YAML_ALIAS_NODES,
)
from voicebudget._io._parse import csv_rows, finite_int, json_depth, load_toml, parse_json
from voicebudget._io._references import MAX_REFERENCE_DEPTH, Roots, check_cycle, reference_context, resolve_reference
from voicebudget._io._write import check_target, write_atomic

if TYPE_CHECKING:
    from voicebudget._io._yaml import compose_yaml, load_yaml

__all__ = [
    "DOCUMENT_SUFFIXES",
    "MAX_DATA_BYTES",
    "MAX_DOCUMENT_BYTES",
    "MAX_NESTING",
    "MAX_REFERENCE_DEPTH",
    "MAX_TRACE_BYTES",
    "MAX_YAML_ALIAS_NODES",
    "Roots",
    "check_cycle",
    "check_target",
    "compose_yaml",
    "compressed",
    "csv_rows",
    "finite_int",
    "iter_blocks",
    "iter_lines",
    "json_depth",
    "load_toml",
    "load_yaml",
    "parse_json",
    "read_bytes",
    "read_document",
    "read_head",
    "read_text",
    "refuse_other_document",
    "reference_context",
    "resolve_reference",
    "split_lines",
    "validation_error",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    """``compose_yaml`` and ``load_yaml``, imported on first use (PyYAML takes ~10 ms to import, and a TOML
    scenario needs none of it)."""
    if name in ("compose_yaml", "load_yaml"):
        from voicebudget._io import _yaml  # lazy: start-up (see above)

        return getattr(_yaml, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
