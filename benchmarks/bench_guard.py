"""Cost of one BudgetGuard decision, next to an OpenTelemetry SDK span (the ``bench`` extra).

Run: ``.venv/bin/python benchmarks/bench_guard.py``. One run on this machine, best of several
repeats, cases taking turns (see bench_recorder.py for the method). A decision is
``GuardedTurn.check()`` (a clock read and the prediction) and ``BudgetGuard.decide()`` (the
prediction alone), on a guard built from the bundled webrtc-cascade scenario (20,000 simulated
turns, 7 stages, the default grid).

Target (issue 14): a few microseconds per decision, and cheaper than one OTel SDK span.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench_recorder import best_ns_per_op, empty, otel_loop

import voicebudget

N = 20_000
SCENARIO = Path(__file__).resolve().parent.parent / "voicebudget" / "data" / "webrtc-cascade.toml"


def main() -> None:
    t0 = time.perf_counter()
    guard = voicebudget.BudgetGuard.from_scenario(
        voicebudget.load_scenario(SCENARIO), samples=20_000, seed=1, phases={"commit": ["endpointing", "asr"]}
    )
    build_ms = (time.perf_counter() - t0) * 1000
    live = guard.turn()
    live.enter("llm")

    def decide(n: int) -> None:
        for _ in range(n):
            guard.decide("llm", 500.0, 120.0)

    def check(n: int) -> None:
        for _ in range(n):
            live.check()

    b = best_ns_per_op({"empty": (empty, N), "decide": (decide, N), "check": (check, N),
                        "otel": (otel_loop(False), N // 5)})  # fmt: skip
    loop = b["empty"]
    decide_ns, check_ns, otel_ns = b["decide"] - loop, b["check"] - loop, b["otel"] - loop
    print(f"guard built from {guard.n_turns} simulated turns x {len(guard.stages)} stages in {build_ms:.0f} ms")
    print(f"  BudgetGuard.decide()                 {decide_ns / 1000:7.3f} us")
    print(f"  GuardedTurn.check() (clock + decide) {check_ns / 1000:7.3f} us")
    print(f"  OpenTelemetry SDK span, no processor {otel_ns / 1000:7.3f} us")
    print(f"OTel span / decision (check): {otel_ns / check_ns:5.1f}x   (target: > 1x, a few us per decision)")


if __name__ == "__main__":
    main()
