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
from doc_outputs import DOCS, FAST_MODE_70B, blocks, matches, render, run, run_json, trace_fit_turns

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
    if kind == "pytest":  # the example sleeps for real: its timings match within a tolerance
        assert matches(kind, arg, body), (
            f"{page}: the pytest block {arg!r} is stale; pytest prints now:\n{render(kind, arg)}"
        )
        return
    now = render(kind, arg)
    assert body == now, f"{page}: the {kind} block {arg!r} is stale; run python tests/doc_outputs.py {page}"


CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)
PINNED_ELSEWHERE = {
    # page: the console blocks' first command line, pinned by the named test
    ("inference.md", "$ voicebudget infer -m llama-3.3-70b -H h100-sxm --chips 2 --precision fp8 \\"): (
        "tests/test_inference_hfconfig.py::test_request_rate_example_of_docs_prints_its_numbers"
    ),
    (
        "ci.md",
        "$ voicebudget compare before.json after.json --ignore-stage other --predicted fitted.toml:vendor-claim",
    ): (
        "tests/test_predicted.py::test_predicted_vs_measured_on_a_real_pipecat_pipeline (a real pipeline's timings: "
        "within tolerance)"
    ),
    ("ci.md", "$ voicebudget run scenarios/ci.toml --format github     # the scenario of tests/test_ci_formats.py"): (
        "tests/test_ci_formats.py::test_the_annotations_docs_ci_shows_are_what_run_prints (the scenario is that "
        "test file's)"
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
    tail = council_tail()
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
        *cache_pins(),
        *tune_intent_40_pins(),
    ]


def council_tail() -> re.Match[str]:
    """The router council's tail driver line of ``run scenarios/council-vs-cache.toml`` (docs/councils.md and
    docs/engine.md quote it)."""
    tail = re.search(
        r"tail driver: llm \(mean ([\d.]+) ms of the slowest 5% of turns; sonnet ([\d.]+) ms\)",
        run("run scenarios/council-vs-cache.toml")[1].replace("\n", " "),
    )
    assert tail is not None
    return tail


def cache_pins() -> list[str]:
    # docs/councils.md: evaluate_cache on the scenario's reply cache, other_latency_ms = 370, its defaults
    from voicebudget.councils import UserTime, evaluate_cache

    scenario = vb.load_scenario(DOCS.parent / "scenarios" / "council-vs-cache.toml")
    cache = scenario.variants["reply-cache"].llm
    assert (cache.hit_rate, cache.false_hit_rate, cache.miss_error_rate, cache.conversation_turns) == (
        0.3,
        0.03,
        0.08,
        10,
    )
    result = evaluate_cache(cache, scenario.budget, user_time=UserTime(other_latency_ms=370)).to_dict()
    saved = result["expected_user_time_without_cache_ms"] - result["expected_user_time_ms"]
    assert saved > 0  # "saves"
    return [
        f"{_pct(result['conversation_hit_rate'])} of conversations see a hit and "
        f"{result['conversation_false_hit_rate']:.1%} hear at least one wrong cached reply",
        f"the break-even false-hit rate is {_pct(result['break_even_false_hit_rate'])}",
        f"~{round(saved, -1):.0f} ms of user time per completed request "
        f"({result['expected_user_time_without_cache_ms']:.0f} -> {result['expected_user_time_ms']:.0f} ms)",
    ]


def tune_intent_40_pins() -> list[str]:
    best = run_json("tune councils/tune-intent-40.toml -f json")["best"]
    # "all three models stopping at two agreeing labels behind the reply cache"
    assert best["config"] == {
        "members": ["llama-8b", "gpt-oss-120b", "qwen3-235b"],
        "topology": "vote",
        "m": 2,
        "cache": True,
    }
    return [
        f"(accuracy {best['quality']:.3f}, p95 {best['p95_ms']:.0f} ms, {best['expected_user_time_ms']:.0f} ms)",
    ]


def cli_pins() -> list[str]:
    out = run("run scenarios/fast-mode.toml")[1]
    standard, fast = re.findall(r"cost: \$([\d.]+) per turn", out)
    return [f"`cost: ${standard} per turn` standard", f"`cost: ${fast} per turn` in fast mode"]


def engine_pins() -> list[str]:
    tail = council_tail()
    return [f"`tail driver: llm (mean {tail[1]} ms of the slowest 5% of turns; sonnet {tail[2]} ms)`"]


def tuning_pins() -> list[str]:
    doc = run_json("tune councils/tune-intent.toml -f json")
    front = sorted(doc["pareto"], key=lambda c: c["expected_user_time_ms"])
    best, runner_up = front[0], front[1]
    assert best == doc["best"]
    # "2x gpt-oss-120b + qwen3-235b, vote m=2, behind the cache", "3x gpt-oss-120b"
    assert best["config"]["members"] == ["gpt-oss-120b", "gpt-oss-120b", "qwen3-235b"]
    assert (best["config"]["topology"], best["config"]["m"], best["config"]["cache"]) == ("vote", 2, True)
    assert runner_up["config"]["members"] == ["gpt-oss-120b"] * 3
    se, user, next_user = best["standard_errors"], best["expected_user_time_ms"], runner_up["expected_user_time_ms"]
    gap = next_user - user
    assert gap > 2 * (se["expected_user_time_ms"] + runner_up["standard_errors"]["expected_user_time_ms"])  # "beyond"
    return [
        f"(`{user:.0f}±{se['expected_user_time_ms']:.0f}`)",
        f"({doc['space_size']:,} configurations, {doc['feasible']:,} within {doc['budget']['total_ms']:g} ms at p95)",
        f"the shortlist is {doc['shortlisted']} configurations and the front the same {len(front)} rows",
        f"({user:,.0f} ± {se['expected_user_time_ms']:.0f} ms user time, p95 {best['p95_ms']:.1f} ± "
        f"{se['p95_ms']:.1f} ms, ${best['cost_per_turn']:.6f}/turn,",
        f"{gap:.0f} ms of user time ahead of 3x gpt-oss-120b ({next_user:,.0f} ± "
        f"{runner_up['standard_errors']['expected_user_time_ms']:.0f} ms)",
    ]


def scenarios_pins() -> list[str]:
    # the error messages of the page's "Errors" section, from documents with each mistake
    voice = {
        "kind": "voice_turn",
        "endpointing": {"kind": "fixed", "value_ms": 200},
        "asr": {"kind": "lognormal", "p50_ms": 247, "p95_ms": 298},
        "network": {"kind": "fixed", "value_ms": 0},
        "llm": {"kind": "fixed", "value_ms": 500},
        "tts": {"kind": "fixed", "value_ms": 150},
        "transport": {"kind": "fixed", "value_ms": 60},
    }

    def error(pipeline: dict[str, Any], **extra: Any) -> str:
        with pytest.raises(vb.ScenarioError) as exc:
            vb.parse_scenario({"name": "x", "pipeline": pipeline, **extra}, origin="scenarios/x.toml")
        return str(exc.value)

    def sequence(a: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "sequence", "stages": {"a": a}}

    llm = {
        "kind": "llm",
        "ttft": {"kind": "lognormal", "p50_ms": 423, "p95_ms": 500},
        "tpot": {"kind": "fixed", "value_ms": 5},
    }
    bad_variant = {"bad": {"llm": {"ttft": {"p50_ms": 0}}}}
    gamma = error(sequence({"kind": "gamma"}))
    wide = error(sequence({"kind": "lognormal", "p50_ms": 5e-324, "p95_ms": 300}))
    sigma = re.search(r"sigma (\d+)\)", wide)
    assert sigma is not None
    return [
        error({**voice, "asr": {"kind": "lognormal", "p50_ms": 247, "p95_ms": 200}}),
        gamma[: gamma.index("uniform") + len("uniform")],
        error({**voice, "asr": {"kind": "log-normal", "p50_ms": 247, "p95_ms": 298}}).split(" known:")[0],
        error({**voice, "llm": llm}, variants=bad_variant),
        error(sequence({"kind": "fixed", "value_ms": 1, "foo": 2})),
        f"(`p50_ms = 5e-324, p95_ms = 300`: sigma {sigma[1]})",
    ]


def traces_pins() -> list[str]:
    # the fit accuracy table is generated (<!-- table: traces-fit -->); its turns per sample here
    return [f"On the sample traces ({trace_fit_turns()} turns each; tests/test_traces_check_fit.py)"]


def audio_pins() -> list[str]:
    doc = run_json(
        "endpointing scenarios/semantic-turn-detector.yaml --pauses docs/examples/pauses-call-center.toml "
        "--false-end-rate 0.1 -f json"
    )
    settings = {s["label"]: s for s in doc["settings"]}
    frontier = doc["frontier"]
    vad = settings["vad-only"]
    at = next(p for p in frontier if p["timeout_ms"] == vad["added_ms"])
    assert abs(at["cut_share"] - vad["cut_share"]) < 0.01  # "lies on the curve" (Monte Carlo vs closed form)
    base = settings["baseline"]
    same_cut = min(frontier, key=lambda p: abs(p["cut_share"] - base["cut_share"]))
    assert base["added_ms"] > same_cut["added_ms"] + 100  # "sits above the curve"
    return [f"variant, a {vad['added_ms']:.0f} ms timeout, lies on the curve"]


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
    "audio.md": audio_pins,
    "capacity.md": capacity_pins,
    "cli.md": cli_pins,
    "councils.md": councils_pins,
    "engine.md": engine_pins,
    "scenarios.md": scenarios_pins,
    "telemetry.md": telemetry_pins,
    "traces.md": traces_pins,
    "tuning.md": tuning_pins,
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
