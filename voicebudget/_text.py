"""Small helpers for text people read."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None, *, sep: bool = True) -> str:
    """``"1 turn"``, ``"2 turns"``, ``"200,000 turns"``: a number and its noun, singular for one.

    :param plural: the plural form (default ``noun + "s"``).
    :param sep: thousands separators.
    """
    number = f"{n:,}" if sep else str(n)
    return f"{number} {noun if n == 1 else plural or noun + 's'}"
