"""Small helpers for text people read."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["MAX_BEGUN", "as_given", "closest", "count", "literal", "meant", "printable", "shown", "unknown"]


def count(n: int, noun: str, plural: str | None = None, *, sep: bool = True) -> str:
    """``"1 turn"``, ``"2 turns"``, ``"200,000 turns"``: a number and its noun, singular for one.

    :param plural: the plural form (default ``noun + "s"``).
    :param sep: thousands separators.
    """
    number = f"{n:,}" if sep else str(n)
    return f"{number} {noun if n == 1 else plural or noun + 's'}"


def _plain(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


MAX_BEGUN = 4
"""At most this many names that a typed name begins are offered as what it meant (``"llama"`` begins a
dozen models: none of them is offered)."""


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` was probably meant as: the first of :func:`meant` (``None`` when nothing is
    close)."""
    guesses = meant(name, known)
    return guesses[0] if guesses else None


def meant(name: str, known: Iterable[str]) -> list[str]:
    """The known names ``name`` was probably meant as, in the order given: the one with the same letters and
    digits (``"log-normal"`` for ``"lognormal"``, ``"H100_SXM"`` for ``"h100-sxm"``); else every name that
    ``name`` begins, when that is a few (:data:`MAX_BEGUN`; ``"h100"``: ``h100-sxm`` and ``h100-pcie``, not
    the ``h200`` difflib's ratio would pick); else the closest by :mod:`difflib`'s ratio (at least 0.6);
    empty when nothing is close."""
    names = list(known)
    plain = _plain(name)
    same = [k for k in names if _plain(k) == plain]
    if same:
        return same[:1]
    begun = [k for k in names if len(plain) >= 3 and _plain(k).startswith(plain)]
    if 0 < len(begun) <= MAX_BEGUN:
        return begun
    by_plain = {_plain(k): k for k in names}
    near = difflib.get_close_matches(plain, list(by_plain), n=1, cutoff=0.6)
    return [by_plain[near[0]]] if near else []


def unknown(what: str, name: object, known: Iterable[str]) -> str:
    """``unknown kind 'log-normal'; did you mean 'lognormal'? known: fixed, ...``: the message for a name
    that is not one of ``known`` (listed in the order given), with the names it was probably meant as
    (:func:`meant`: ``did you mean 'h100-sxm' or 'h100-pcie'?``)."""
    names = list(known)
    text = str(name)[:80]
    guesses = meant(text, names)
    hint = f"; did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ";"
    return f"unknown {what} {text!r}{hint} known: {', '.join(names)}"


def as_given(x: float, decimals: int = 0) -> str:
    """A number as it was given: ``0.8`` stays ``"0.8"`` (``f"{x:.0f}"`` would print ``"1"``), ``800.0`` is
    ``"800"``, ``0.26`` is ``"0.26"``; with ``decimals``, at least that many (``as_given(800, 1)`` is
    ``"800.0"``, ``as_given(0.25, 1)`` ``"0.25"``). The shortest text that reads back as the same float
    (Python's ``repr``), without thousands separators; exponents stay (``1e-05``).

    :param decimals: the fewest digits after the point.
    """
    text = repr(float(x))
    if "e" in text or "n" in text:  # 1e-05, inf, nan
        return text
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(decimals, "0")
    return f"{whole}.{frac}" if frac else whole


def shown(value: object, limit: int = 40) -> str:
    """``value`` for an error message, at most ``limit`` characters: an integer of 300 digits or more as
    ``a 401-digit number`` (``str`` of one past 4,300 digits raises ``ValueError``, ``float`` of one past
    the float range ``OverflowError``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**300:
        digits = int(abs(value).bit_length() * 0.30103) + 1  # log10(2): exact to +-1 digit
        return f"a {digits:,}-digit number"
    return str(value)[:limit]


def printable(value: object) -> str:
    """``value`` with its control characters but line ends shown as escapes (``\\x1b``, ``\\x07``): a name
    or a message from a file must not drive the terminal. For text rich does not read as markup (a
    :class:`rich.text.Text`); :func:`literal` for text it does."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == "\n" else repr(ch)[1:-1] for ch in text)


def literal(value: object) -> str:
    """``value`` as text rich prints as written where it reads markup (a table cell, a title, a caption,
    ``Text.from_markup``, ``Console.print`` of a string): its markup escaped (a ``[/x]`` in a stage name
    raised rich's ``MarkupError``, a ``[bold]`` vanished) and its control characters shown
    (:func:`printable`)."""
    from rich.markup import escape  # rich only when rendering: the library imports without it

    return escape(printable(value))
