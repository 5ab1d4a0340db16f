"""`fit` on large traces: linear in turns (issue 11: 5,000 turns took 9.6 s, 100,000 never finished).

Writes a seeded synthetic LiveKit metrics trace (EOU, LLM and TTS metrics per turn) of 10,000 and of
100,000 turns, then times the two halves of ``voicebudget fit`` separately: reading the trace
(``read_traces``) and fitting + writing the scenario (``fit`` with the joint method, the TOML text
with its comments, ``TraceFit.write``). Prints both and the 100k / 10k ratio of each: ~10 is linear,
~100 quadratic. Targets: fit + write ratio below 15, and the whole command on 100,000 turns under 10 s
on a quiet machine. The process's peak resident memory is printed at the end.
Usage: ``python benchmarks/bench_fit.py [--turns N [N ...]] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from voicebudget.traces import read_traces
from voicebudget.traces._fit import fit


def write_livekit(path: Path, n: int, seed: int = 1) -> None:
    """A LiveKit metrics trace of ``n`` turns (log-normal EOU delay, TTFT and TTS TTFB)."""
    rng = np.random.default_rng(seed)
    eou = rng.lognormal(np.log(0.5), 0.2, n)
    ttft = rng.lognormal(np.log(0.6), 0.4, n)
    ttfb = rng.lognormal(np.log(0.2), 0.3, n)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            sid, t = f"speech_{i:07d}", 1764413800.0 + 10 * i
            rows = [
                {
                    "type": "eou_metrics",
                    "timestamp": t,
                    "end_of_utterance_delay": round(float(eou[i]), 4),
                    "transcription_delay": round(float(eou[i]) * 0.9, 4),
                    "on_user_turn_completed_delay": 0.0005,
                    "speech_id": sid,
                },
                {
                    "type": "llm_metrics",
                    "label": "livekit.plugins.openai.llm.LLM",
                    "request_id": "r" + sid,
                    "timestamp": t + 2,
                    "duration": 3.0,
                    "ttft": round(float(ttft[i]), 4),
                    "cancelled": False,
                    "completion_tokens": 46,
                    "prompt_tokens": 800,
                    "total_tokens": 846,
                    "speech_id": sid,
                },
                {
                    "type": "tts_metrics",
                    "label": "livekit.plugins.cartesia.tts.TTS",
                    "request_id": "t" + sid,
                    "timestamp": t + 2.5,
                    "ttfb": round(float(ttfb[i]), 4),
                    "duration": 1.0,
                    "audio_duration": 2.0,
                    "cancelled": False,
                    "characters_count": 40,
                    "streamed": True,
                    "speech_id": sid,
                },
            ]
            fh.write("".join(json.dumps(r) + "\n" for r in rows))


def measure(path: Path, out: Path) -> dict[str, float]:
    """Seconds of reading, and of fitting + writing."""
    t0 = time.perf_counter()
    tables = read_traces([path])
    t1 = time.perf_counter()
    fit(tables, method="joint").write(out, overwrite=True)
    t2 = time.perf_counter()
    return {"read_s": t1 - t0, "fit_s": t2 - t1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.turns:
            trace = Path(tmp) / f"t{n}.jsonl"
            write_livekit(trace, n)
            runs = [measure(trace, Path(tmp) / "fitted.toml") for _ in range(args.repeat)]
            best = {k: min(r[k] for r in runs) for k in runs[0]}
            results[n] = best
            print(
                f"{n:>8,} turns ({trace.stat().st_size / 2**20:.0f} MiB): read {best['read_s']:.2f} s, "
                f"fit + write {best['fit_s']:.2f} s"
            )
    if len(results) >= 2:
        small, large = min(results), max(results)
        for key in ("read_s", "fit_s"):
            ratio = results[large][key] / results[small][key]
            print(f"{key[:-2]}: {large:,} / {small:,} turns = {ratio:.1f}x (linear: {large / small:.0f}x)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    print(f"peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
