"""Throughput and memory of the line-based trace readers against their floors (issue 24, reader rows).

For each line-based format (the readers with ``read_lines``: Pipecat debug log, LiveKit metrics JSON
lines, OTLP JSON lines) a ~``--mb`` MB trace is generated with ``bench_trace_memory.py``'s turns (the
six-line Pipecat turn, the four-line LiveKit turn, one OTLP line a turn whose ``llm_node`` span also
carries the chat context, as LiveKit's does), then, in one process and in turns (best of ``--repeat``,
CPU time):

- ``read_trace(path)``, as MB/s (file bytes over CPU seconds). Target: >= 25 MB/s;
- its floor, and the reader's ratio to it. Target: <= 10x. The floor of a log is reading the file's
  lines and decoding each (``for raw in open(path, "rb"): raw.decode()``, what a streaming reader does
  before it looks at a line); of a JSON-lines format, ``json.loads`` of each line.

Memory (OTLP JSON lines, and the others alike): ``read_trace`` under ``tracemalloc`` in a fresh process;
the peak of Python allocations over what the returned table holds at the end (the turns kept). Memory
bounded by the turns kept, not by the file: a small multiple of the table, whatever a line carries
besides what a turn needs. Target: <= 3x (an OTLP turn's spans are held until the end of the file, where
its children and its ``user_turn`` sibling may be).

Usage: ``python benchmarks/bench_trace_speed.py [--mb 20] [--repeat 5] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _bench import checkout_env, cpu_seconds, interleaved_best, load, verdict
from bench_trace_memory import livekit_turn, otlp_turn, pipecat_turn, write

from voicebudget.traces import read_trace

MB_PER_S = 25.0
"""Every line-based reader reads at least this many MB (10^6 bytes) of trace per CPU second."""
FLOOR_RATIO = 10.0
"""... and takes at most this many times its floor."""
MEMORY_RATIO = 3.0
"""Peak Python allocations while reading over what the table keeps."""


def split_lines(path: Path) -> None:
    """The floor of a log: its lines, each decoded (a streaming reader decodes line by line, so that one
    bad byte costs one line and the size limit holds while reading)."""
    with path.open("rb") as fh:
        for raw in fh:
            raw.decode("utf-8", "replace")


def json_lines(path: Path) -> None:
    """The floor of a JSON-lines format: its lines, each parsed."""
    with path.open("rb") as fh:
        for raw in fh:
            json.loads(raw)


def otlp_turn_with_context(i: int) -> str:
    """``bench_trace_memory.otlp_turn`` with what LiveKit Agents puts on its ``llm_node`` span besides the
    TTFT: the chat context so far as JSON (``lk.pii.chat_ctx``, ``json.dumps(chat_ctx.to_dict(...))``) and
    the reply (``lk.pii.response.text``), livekit-agents 1.8.9 ``telemetry/trace_types.py`` and
    ``voice/generation.py`` (read 2026-12-02); here the last 6 exchanges, ~1.5 KB."""
    doc = json.loads(otlp_turn(i))
    history = [
        {"type": "message", "role": role, "content": [f"{role} words of exchange {k}, a sentence or two long"]}
        for k in range(max(0, i - 6), i + 1)
        for role in ("user", "assistant")
    ]
    extra = [
        {"key": "lk.pii.chat_ctx", "value": {"stringValue": json.dumps({"items": history})}},
        {"key": "lk.pii.response.text", "value": {"stringValue": f"the reply of turn {i}, a sentence or two long"}},
    ]
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if span["name"] == "llm_node":
            span["attributes"] += extra
    return json.dumps(doc) + "\n"


FORMATS: dict[str, tuple[Callable[[int], str], str, Callable[[Path], None], str]] = {
    "pipecat": (pipecat_turn, "pipecat.log", split_lines, "lines decoded"),
    "livekit": (livekit_turn, "metrics.jsonl", json_lines, "json.loads per line"),
    "otel": (otlp_turn_with_context, "spans.jsonl", json_lines, "json.loads per line"),
}
"""Format name -> (one turn's text, file name, floor, floor's description)."""

_MEMORY_CHILD = """
import gc, sys, tracemalloc
from voicebudget.traces import read_trace
import voicebudget.traces._read  # the readers' modules and their patterns load before tracing starts
gc.collect()
tracemalloc.start()
table = read_trace(sys.argv[1])
gc.collect()
kept, peak = tracemalloc.get_traced_memory()
print(kept, peak, len(table.turns))
"""


def memory(path: Path) -> tuple[int, int, int]:
    """Bytes the table keeps, peak bytes while reading, turns: ``read_trace`` in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(path)], check=True, capture_output=True, text=True, env=checkout_env()
    )
    kept, peak, turns = out.stdout.split()
    return int(kept), int(peak), int(turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="size of each generated trace, MB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only the formats whose name contains this")
    args = parser.parse_args()
    met = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (turn, file, floor, floor_name) in FORMATS.items():
            if args.only not in name:
                continue
            path = Path(tmp) / file
            write(path, turn, args.mb)
            size = path.stat().st_size
            t = interleaved_best(
                args.repeat,
                {
                    "reader": lambda p=path: cpu_seconds(lambda: read_trace(p)),
                    "floor": lambda p=path, f=floor: cpu_seconds(lambda: f(p)),
                },
            )
            kept, peak, turns = memory(path)
            rate = size / 1e6 / t["reader"]
            lines = [
                verdict(f"{name}: read_trace {rate:6.1f} MB/s", rate, MB_PER_S, at_least=True, unit=" MB/s"),
                verdict(
                    f"{name}: read_trace {t['reader'] * 1e3:.0f} ms vs {floor_name} {t['floor'] * 1e3:.0f} ms",
                    t["reader"] / t["floor"],
                    FLOOR_RATIO,
                ),
                verdict(
                    f"{name}: peak {peak / 2**20:.1f} MiB of Python allocations while reading {size / 1e6:.1f} MB, "
                    f"{kept / 2**20:.1f} MiB kept ({turns:,} turns, {kept / max(turns, 1):.0f} B/turn)",
                    peak / max(kept, 1),
                    MEMORY_RATIO,
                ),
            ]
            for line in lines:
                print(line)
                met += "NOT met" not in line
                total += 1
    print(f"{met} of {total} targets met (CPU time, best of {args.repeat}; {load()})")


if __name__ == "__main__":
    main()
