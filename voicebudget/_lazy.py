"""Lazy public surfaces (PEP 562): a package's names are imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr", "lazy_table"]


def lazy_table(public: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """The lookup table of a lazy surface: public name -> its module, from module -> names.

    :param public: each module and the public names it defines, the one list a package writes.
    :raises ValueError: a name listed under two modules.
    """
    table: dict[str, str] = {}
    for module, names in public.items():
        for name in names:
            if name in table:
                raise ValueError(f"{name!r} is listed under {table[name]!r} and {module!r}")
            table[name] = module
    return table


def lazy_getattr(
    package: str, table: Mapping[str, str], namespace: dict[str, Any], *, first: str | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``table[name]`` and caches it in ``namespace``.

    :param package: the package's name, for the error message.
    :param table: public name -> the module that defines it.
    :param namespace: the package's ``globals()`` (a name is looked up once, then found there).
    :param first: a module to import before any name (e.g. one that completes forward references).
    :raises AttributeError: (from the returned function) a name the package does not have.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if first is not None:
            importlib.import_module(first)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
