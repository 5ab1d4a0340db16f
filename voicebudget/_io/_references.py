"""``file`` references inside documents: resolved against the document's folder, inside allowed roots."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from voicebudget._errors import ScenarioError, param
from voicebudget._io._files import _kind

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
