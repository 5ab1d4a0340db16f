"""The fuzzer of issue 22's kinds (tests/fuzz_kinds_cases.py) on a small budget: a few seeded cases of each
kind keep the contract (exit 0, 1 or 2 in one line, within the time limit, inputs unchanged, nothing lost
after a signal at write time). benchmarks/fuzz_kinds.py runs 10,000 and more."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest
from fuzz_kinds_cases import MAKERS, Outcome, _message_ok, _pythons_own, run_case

POSIX_ONLY = {"fifo", "signal at write"}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_fuzzed_inputs_of_each_kind_keep_the_contract(tmp_path: Path, kind: str) -> None:
    if kind in POSIX_ONLY and (os.name != "posix" or not hasattr(signal, "setitimer")):
        pytest.skip("FIFOs and signals are POSIX")
    rng = random.Random(f"issue 22 {kind}")
    for i in range(1 if kind == "signal at write" else 2):
        folder = tmp_path / str(i)
        folder.mkdir()
        case = MAKERS[kind](rng, folder)
        outcome = run_case(case, timeout=30.0)
        assert outcome.verdict in ("ok", "input error"), (case.args, outcome)


@pytest.mark.parametrize(
    ("output", "command", "why"),
    [
        ("error: s.toml: samples: must be >= 1\n", "run", ""),
        ("error: s.toml: 2 errors:\ns.toml: a: x\ns.toml: b: y\n", "run", ""),
        ("turns ...\ntable\nerror: t.jsonl: no usable turn to check\n", "check", ""),
        ("Usage: voicebudget run\n╭─ Error ─╮\n│ Invalid value │\n╰─╯\n", "run", "0 'error:' lines"),
        ("warning: overflow\nerror: s.toml: bad\n", "run", "1 line(s) before the error"),
        ("error: bad\n  File x.py, line 3\n", "run", "lines after a single error"),
    ],
)
def test_the_judge_of_an_error_message(output: str, command: str, why: str) -> None:
    assert _message_ok(output, command).startswith(why) if why else _message_ok(output, command) == ""


def test_an_outcome_names_what_broke() -> None:
    assert Outcome("hang", "run x").verdict == "hang"


@pytest.mark.parametrize(
    ("signum", "text", "own"),
    [
        (signal.SIGINT, 'Traceback (most recent call last):\n  File "<frozen runpy>"\nKeyboardInterrupt', True),
        (signal.SIGINT, "Exception ignored in: <generator object g at 0x1>\nTraceback ...\nKeyboardInterrupt:", True),
        (signal.SIGTERM, "Traceback (most recent call last):\nKeyboardInterrupt", False),
        (signal.SIGINT, "error: internal error in voicebudget 0.1.0 (a bug, not a verdict): SchemaError: ...", False),
    ],
)
def test_pythons_own_report_of_a_ctrl_c_is_told_from_a_crash(signum: int, text: str, own: bool) -> None:
    assert _pythons_own(signum, text) is own
