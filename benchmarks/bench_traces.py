"""Linear time of trace reading and format detection on hostile lines (issue 11, cases 11 and 12).

Reads a Pipecat log whose second line is a long run of one character (spaces after the level column,
a processor name, digits of a TTFB) at 100 KB and at 1 MB, and detects the format of a file made of
one long token. Prints the time ratio 1 MB / 100 KB: ~10 is linear, ~100 quadratic. Target: below 20
(case 11 took 17.8 s at 50 KB before; case 12 4.4 s at 40 KB).
Usage: ``python benchmarks/bench_traces.py [--repeat R]``.
"""

from __future__ import annotations

import argparse
import tempfile
import timeit
from pathlib import Path

from voicebudget.traces import detect_format, read_trace

VAD = (
    "2025-11-29 12:20:00.200 | DEBUG    | pipecat.processors.audio.vad_processor:on_speech_stopped:78 - "
    "VADProcessor#0: User stopped speaking\n"
)
HEAD = "2025-11-29 12:20:00.300 | DEBUG    | x:stop_ttfb_metrics:1 - "
SHAPES = {
    "spaces after level": lambda n: "2025-11-29 12:20:00.300 | DEBUG |" + " " * n,
    "long processor name": lambda n: HEAD + "A" * n + "#1 TTFB",
    "long TTFB digits": lambda n: HEAD + "OpenAILLMService#0 TTFB: " + "1" * n + "x",
}


def best(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    return min(timeit.repeat(fn, repeat=repeat, number=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.log"
        print(f"{'input':28s} {'100 KB ms':>9s} {'1 MB ms':>10s} {'ratio':>6s}")
        for name, shape in SHAPES.items():
            times = []
            for n in (100_000, 1_000_000):
                path.write_text(VAD + shape(n) + "\n")
                times.append(best(args.repeat, lambda: read_trace(path)))
            print(f"{name:28s} {times[0] * 1e3:9.1f} {times[1] * 1e3:10.1f} {times[1] / times[0]:6.1f}")
        det = [best(args.repeat, lambda n=n: detect_format("a" * n + "#1 TTF")) for n in (100_000, 1_000_000)]
        print(f"{'detection, one token':28s} {det[0] * 1e3:9.2f} {det[1] * 1e3:10.2f} {det[1] / det[0]:6.1f}")


if __name__ == "__main__":
    main()
