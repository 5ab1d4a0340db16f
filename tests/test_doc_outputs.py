"""Every number a docs page shows from a command comes from running that command here.

Marker blocks (tests/doc_outputs.py) are regenerated and compared; numbers in prose are pinned below,
each formatted as the page prints it. A page that drifts fails with the command to rewrite it:
``python tests/doc_outputs.py docs/PAGE.md`` (then re-read the prose around it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from doc_outputs import DOCS, FAST_MODE_70B, blocks, render, run, run_json

import voicebudget as vb
from voicebudget._algebra import evaluate, replace
from voicebudget._distributions import Fixed
from voicebudget.capacity._plan import _stage_path

PAGES = sorted(DOCS.glob("*.md"))
BLOCKS = [(page, kind, arg, body) for page in PAGES for kind, arg, body in blocks(page.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    ("page", "kind", "arg", "body"), BLOCKS, ids=[f"{p.name}:{k}:{a[:40]}" for p, k, a, _ in BLOCKS]
)
def test_block_is_what_the_command_prints(page: object, kind: str, arg: str, body: str) -> None:
    now = render(kind, arg)
    assert body == now, f"{page}: the {kind} block {arg!r} is stale; run python tests/doc_outputs.py {page}"


CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)
PINNED_ELSEWHERE = {
    # page: the console blocks' first command line, pinned by the named test
    ("inference.md", "$ voicebudget infer -m llama-3.3-70b -H h100-sxm --chips 2 --precision fp8 \\"): (
        "tests/test_inference_hfconfig.py::test_request_rate_example_of_docs_prints_its_numbers"
    ),
    # NOT pinned yet, listed so that the gap shows: scenarios/ci.toml is written by tests/test_ci_formats.py
    # into a temporary folder, not shipped, so the page's command cannot be run as shown
    ("ci.md", "$ voicebudget run scenarios/ci.toml --format github     # the scenario of tests/test_ci_formats.py"): (
        "nothing (to do: ship the scenario or generate the block)"
    ),
}


def test_no_console_output_outside_a_marker_block() -> None:
    # a console block whose command lines are followed by output lines shows a command's output: it must be
    # a marker block (regenerated above), an excerpt of what its one-line command prints now (checked here),
    # or pinned by a named test
    loose = []
    for page in PAGES:
        text = BLOCK_FREE(page.read_text(encoding="utf-8"))
        for m in CONSOLE.finditer(text):
            lines = m.group(1).splitlines()
            shown = [x for x in lines if x.strip() and not x.startswith(("$ ", "  ", "..."))]
            if shown and (page.name, lines[0]) not in PINNED_ELSEWHERE and not _excerpt_of(lines[0], shown):
                loose.append(f"{page.name}: {lines[0]} -> {shown[0]!r}")
    assert not loose, "command output shown outside a marker block:\n" + "\n".join(loose)


def _excerpt_of(command_line: str, shown: list[str]) -> bool:
    """An excerpt (lines of the output, ``...`` for the rest) of a one-line command: pinned when every line
    it shows is a line the command prints now."""
    command = command_line.removeprefix("$ voicebudget ").split("  #")[0].strip()
    if command.endswith("\\") or not command_line.startswith("$ voicebudget "):
        return False
    try:
        _, out = run(command)
    except AssertionError:  # the command fails here (a file the page does not ship): not pinned
        return False
    printed = set(out.splitlines())
    return all(line in printed for line in shown)


def BLOCK_FREE(text: str) -> str:  # noqa: N802 - reads as a filter
    from doc_outputs import BLOCK

    return BLOCK.sub("", text)


# --- numbers in prose, per page ------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x:.0%}"


def price(deployment: dict[str, Any]) -> float:
    usd: float = deployment["deployment"]["usd_per_chip_hour"]
    return usd


def capacity_pins() -> list[str]:
    base = run_json("capacity scenarios/support-line.toml --target-calls 500 -f json")
    cached = run_json("capacity scenarios/support-line.toml --target-calls 500 --prefix-caching on -f json")
    by = {d["name"]: d for d in base["deployments"]}
    cby = {d["name"]: d for d in cached["deployments"]}
    # the turn without its LLM: the baseline pipeline with the llm stage at 0 ms, as capacity simulates it
    scenario = vb.load_scenario(DOCS.parent / "scenarios" / "support-line.toml")
    tree = scenario.pipeline.to_tree()
    path = _stage_path(tree, "llm")
    assert path is not None
    no_llm = float(np.percentile(evaluate(replace(tree, path, Fixed(value_ms=0)), 20_000, 1).total, 95))
    h100, h200 = by["baseline"], by["h200"]
    over = next(p for p in h100["curve"] if p["calls"] == h100["max_concurrent_calls"] + 1)
    fast, big = cby["h100-fast-mode"], cby["baseline"]
    assert by["h100-fast-mode"]["max_concurrent_calls"] == h100["max_concurrent_calls"]  # "carries the same calls"
    assert by["wafer-scale-api"]["max_concurrent_calls"] == by["hosted-flash-lite"]["max_concurrent_calls"] == 0
    at_800 = run_json(FAST_MODE_70B.replace("--budget-ms 1500", "--budget-ms 800") + " -f json")
    assert all(d["max_concurrent_calls"] == 0 for d in at_800["deployments"])  # "does not fit 800 ms at any load"
    return [
        f"already takes {no_llm:.0f} ms at p95",
        f"~{800 - no_llm:.0f} ms of headroom",
        f"({over['calls']} calls, {over['request_rate_per_s']:.1f} requests/s, "
        f"{over['concurrency']:.1f} requests in flight)",
        f"The H200 carries {_pct(h200['max_concurrent_calls'] / h100['max_concurrent_calls'] - 1)} more calls",
        f"at {_pct(price(h200) / price(h100) - 1)} more per hour",
        f"costs {fast['cost_per_call_minute'] / big['cost_per_call_minute']:.1f}x per call-minute for "
        f"{big['percentile_ms_at_max'] - fast['percentile_ms_at_max']:.0f} ms of p95",
    ]


def councils_pins() -> list[str]:
    wafer_all = run_json("council councils/intent-wafer-all.toml -f json")
    plurality = run_json("council councils/intent-40-plurality.toml -f json")
    vote_code, vote = run("council councils/intent-wafer-vote.toml")
    members_p95 = [c["p95_ms"] for c in wafer_all["components"]]
    assert max(members_p95) <= 400 < wafer_all["latency"]["p95_ms"]  # "each member alone is within ...; all three not"
    gain = (wafer_all["quality"]["accuracy"] - wafer_all["quality"]["best_member"]) * 100
    cache = run_json("run scenarios/council-vs-cache.toml -f json")
    by = {v["name"]: v for v in cache["variants"]}
    router = by["router-council"]
    cache_gain = by["baseline"]["total"]["mean_ms"] - by["reply-cache"]["total"]["mean_ms"]
    tail = re.search(
        r"tail driver: llm \(mean ([\d.]+) ms of the slowest 5% of turns; sonnet ([\d.]+) ms\)",
        run("run scenarios/council-vs-cache.toml")[1].replace("\n", " "),
    )
    assert tail is not None
    assert vote_code == 0
    vote_p95 = float(re.search(r"PASS p95 ([\d.]+) ms", vote)[1])  # type: ignore[index]
    together = float(re.search(r"together .* ([\d.]+) ms", vote)[1])  # type: ignore[index]
    return [
        f"at p95 (~{round(sum(members_p95) / len(members_p95)):.0f} ms)",
        f"({wafer_all['latency']['p95_ms']:.0f} ms): the max of three tails",
        f"The vote buys {gain:.1f} points of accuracy",
        f"accuracy {plurality['quality']['accuracy']:.3f} against {wafer_all['quality']['accuracy']:.3f} in the binary",
        f"and {plurality['expected_user_time_ms']:.0f} ms of expected user time per completed request against "
        f"{wafer_all['expected_user_time_ms']:.0f} ms",
        f"`tail driver: llm (mean {tail[1]} ms of the slowest 5% of turns; sonnet {tail[2]} ms)`",
        f"into the p95 ({router['total']['p95_ms'] / 1000:.1f} s)",
        f"cuts the mean by ~{round(cache_gain, -1):.0f} ms",
        f"`PASS: p95 {vote_p95:.1f} ms <= 400 ms`",
        f"p95 {vote_p95:.0f} ms, tail mean ~{together:.0f} ms",
    ]


def telemetry_pins() -> list[str]:
    doc = run_json(
        "guard-report scenarios/webrtc-cascade.toml --variant wafer-scale-llm --filler-ms 100 -p p-fit -p p-fit:0.2 "
        "-p timeout:1000 -p timeout:300 -p median -p median:budget -f json"
    )
    by = {p["policy"]: p for p in doc["policies"]}
    fit, q20, t300, budget_left = by["p-fit"], by["p-fit:0.2"], by["timeout:300"], by["median:budget"]
    assert fit["fired"] == 1.0
    assert fit["fire_p50_ms"] == 0.0  # "at the end of speech on every turn"
    assert fit["still_over"] == 0.0  # "no late turn is left"
    assert by["timeout:1000"]["fired"] == by["median:1500"]["fired"] == 0.0  # "never fires"

    def pct(x: float) -> str:
        return f"{x:.1%}"

    return [
        f"On this variant {pct(doc['over'])} of the replies are late",
        f"but {pct(fit['wasted'])} of the turns get a filler they did not need",
        f"it fires on {pct(q20['fired'])} of the turns, {pct(q20['wasted'])} wasted, and leaves "
        f"{pct(q20['still_over'])} over",
        f"at 300 ms it fires on {pct(t300['fired'])}",
        f"fire on {pct(budget_left['fired'])} of the turns, {pct(budget_left['wasted'])} wasted, and leave "
        f"{pct(budget_left['still_over'])} over",
    ]


PINS: dict[str, Callable[[], list[str]]] = {
    "capacity.md": capacity_pins,
    "councils.md": councils_pins,
    "telemetry.md": telemetry_pins,
}


@pytest.mark.parametrize("page", sorted(PINS))
def test_prose_figures_are_the_commands(page: str) -> None:
    text = " ".join((DOCS / page).read_text(encoding="utf-8").split())
    missing = [pin for pin in PINS[page]() if " ".join(pin.split()) not in text]
    assert not missing, f"docs/{page} does not say (the commands print these now): {missing}"


def test_the_command_runner_keeps_exit_codes() -> None:
    code, out = run("council councils/intent-wafer-all.toml")
    assert code == 1  # over budget, as the page's `echo $?` shows
    assert "FAIL p95" in out
