"""The stage tree as an interface: every stage kind declares its sub-stages (``children()``), and one
``walk``/``replace`` reaches every stage, inside councils and reply caches too (issue 23, item 1)."""

from __future__ import annotations

import json
import tomllib
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget._algebra import Stage, leaves, replace, walk
from voicebudget._simulate import wafer_paths
from voicebudget._stages import StageSpec
from voicebudget.cli import app
from voicebudget.councils import Council, Preemptive, ReplyCache
from voicebudget.inference import WaferStage

runner = CliRunner()

FIXED = {"kind": "fixed", "value_ms": 10.0}
LLM = {"kind": "llm", "ttft": {"kind": "fixed", "value_ms": 200.0}, "tpot": {"kind": "fixed", "value_ms": 20.0}}
WAFER = {"kind": "wafer", "model": "llama-3.3-70b", "hardware": "wse-3", "jitter_cv": 0.0}
MEMBER = {"name": "a", "stage": LLM, "p": 0.8}

EXAMPLES: dict[str, dict[str, Any]] = {
    "fixed": FIXED,
    "uniform": {"kind": "uniform", "low_ms": 1.0, "high_ms": 2.0},
    "normal": {"kind": "normal", "mean_ms": 10.0, "std_ms": 1.0},
    "lognormal": {"kind": "lognormal", "p50_ms": 10.0, "p95_ms": 20.0},
    "empirical": {"kind": "empirical", "samples_ms": [1.0, 2.0]},
    "mixture": {"kind": "mixture", "components": [FIXED, FIXED], "weights": [0.5, 0.5]},
    "shifted": {"kind": "shifted", "base": FIXED, "shift_ms": 5.0},
    "observed": {"kind": "observed", "table": "t", "values_ms": [1.0, 2.0]},
    "llm": LLM,
    "tts": {"kind": "tts", "ttfb": FIXED},
    "network": {"kind": "network", "base": FIXED},
    "gpu": {"kind": "gpu", "model": "llama-3.1-8b", "hardware": "h100-sxm", "jitter_cv": 0.0},
    "wafer": WAFER,
    "api": LLM | {"kind": "api"},
    "council": {
        "kind": "council",
        "topology": "all",
        "members": [MEMBER, {**MEMBER, "name": "b", "stage": {"kind": "sequence", "stages": {"x": FIXED}}}],
    },
    "reply_cache": {"kind": "reply_cache", "hit_rate": 0.3, "hit": FIXED, "miss": LLM},
    "preemptive": {"kind": "preemptive", "stage": LLM, "trigger_rate": 0.5, "match_rate": 0.5, "lead": FIXED},
    "tool_turn": {"kind": "tool_turn", "share": 0.3, "tool": FIXED, "second_pass": LLM},
    "sequence": {"kind": "sequence", "stages": {"x": FIXED, "y": LLM}},
    "barge_in": {"kind": "barge_in", "stages": {"detection": FIXED, "transport": LLM}},
    "all_of": {"kind": "all_of", "stages": {"x": FIXED, "y": LLM}},
    "k_of_n": {"kind": "k_of_n", "k": 1, "stages": {"x": FIXED, "y": LLM}},
    "race": {"kind": "race", "stages": {"x": FIXED, "y": LLM}},
    "choice": {"kind": "choice", "weights": [0.5, 0.5], "stages": {"x": FIXED, "y": LLM}},
}

UNION: tuple[type[BaseModel], ...] = typing.get_args(typing.get_args(StageSpec)[0])


def _field_types(model: type[BaseModel]) -> dict[str, Any]:
    """A model's field -> its type, resolved: a kind that holds stages is built on first use, and until then
    pydantic keeps its ``StageSpec`` annotation as a forward reference (voicebudget/_stages.py)."""
    hints = typing.get_type_hints(model)
    return {name: hints[name] for name in model.model_fields}


def _holds_stages(annotation: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether a field of this type can hold any stage: its type contains the whole StageSpec union
    (a Distribution field is a parameter of its model, not a sub-stage), directly or in a model it holds."""
    args = set(typing.get_args(annotation))
    if set(UNION) <= args:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
        return any(_holds_stages(t, seen | {annotation}) for t in _field_types(annotation).values())
    return any(_holds_stages(a, seen) for a in args)


def _stages_in(value: Any) -> list[Any]:
    """The stage objects in a field's value (a stage, or models, tuples and dicts holding them)."""
    if isinstance(value, UNION):
        return [value]
    if isinstance(value, BaseModel):
        return [s for name, t in _field_types(type(value)).items() for s in _field_stages(value, name, t)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _stages_in(v)]
    if isinstance(value, tuple | list):
        return [s for v in value for s in _stages_in(v)]
    return []


def _field_stages(model: BaseModel, name: str, annotation: Any) -> list[Any]:
    return _stages_in(getattr(model, name)) if _holds_stages(annotation) else []


def _example(kind: str) -> Any:
    return vb.Sequence.model_validate({"stages": {"s": EXAMPLES[kind]}}).stages["s"]


def test_every_stage_kind_has_an_example() -> None:
    kinds = {cls.model_fields["kind"].default for cls in UNION}
    assert kinds == set(EXAMPLES), "add an example of the new stage kind to EXAMPLES"
    assert all(issubclass(cls, Stage) for cls in UNION)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_children_returns_every_field_that_holds_stages(kind: str) -> None:
    stage = _example(kind)
    types = _field_types(type(stage))
    held = [s for name, t in types.items() for s in _field_stages(stage, name, t)]
    fields = [name for name, t in types.items() if _field_stages(stage, name, t)]
    assert sorted(map(id, held)) == sorted(map(id, stage.children().values())), (
        f"{type(stage).__name__}: its fields {fields} hold stages; children() returns {list(stage.children())}"
    )
    if held:  # a container rebuilds itself around new children, names kept
        new = stage.with_children({name: vb.Fixed(value_ms=1.0) for name in stage.children()})
        assert list(new.children()) == list(stage.children())
        assert all(c == vb.Fixed(value_ms=1.0) for c in new.children().values())
    with pytest.raises(KeyError):
        stage.with_children({"no-such-stage": vb.Fixed(value_ms=1.0)})


def test_the_voice_turn_declares_its_stages_in_time_order() -> None:
    turn = vb.VoiceTurn.model_validate({k: FIXED for k in vb.STAGE_ORDER if k != "framework"})
    assert list(turn.children()) == list(vb.STAGE_ORDER)
    held = [s for name, f in type(turn).model_fields.items() for s in _field_stages(turn, name, f.annotation)]
    assert sorted(map(id, held)) == sorted(map(id, turn.children().values()))


def test_walk_reaches_council_members_and_cache_paths_and_replace_rebuilds() -> None:
    tree = vb.Sequence.model_validate(
        {
            "stages": {
                "pre": FIXED,
                "llm": {"kind": "reply_cache", "hit_rate": 0.3, "hit": FIXED, "miss": EXAMPLES["council"]},
            }
        }
    )
    paths = [p for p, _ in walk(tree)]
    assert paths == [
        (),
        ("pre",),
        ("llm",),
        ("llm", "cache_hit"),
        ("llm", "cache_miss"),
        ("llm", "cache_miss", "a"),
        ("llm", "cache_miss", "b"),
        ("llm", "cache_miss", "b", "x"),
    ]
    assert [p for p, _ in walk(tree, groups_only=True)] == [(), ("pre",), ("llm",)]
    assert list(leaves(tree)) == ["pre", "llm"]
    new = replace(tree, ("llm", "cache_miss", "b", "x"), vb.Fixed(value_ms=99.0))
    assert dict(walk(new))[("llm", "cache_miss", "b", "x")] == vb.Fixed(value_ms=99.0)
    assert dict(walk(tree))[("llm", "cache_miss", "b", "x")] == vb.Fixed(value_ms=10.0)  # the original is kept
    with pytest.raises(KeyError, match="no sub-stage 'nope'"):
        replace(tree, ("llm", "nope"), vb.Fixed(value_ms=1.0))


def test_default_sample_parts_is_sample_and_no_parts() -> None:
    stage = vb.LogNormal(p50_ms=100.0, p95_ms=200.0)
    drawn, parts = stage.sample_parts(np.random.default_rng(3), 1000)
    np.testing.assert_array_equal(drawn, stage.sample(np.random.default_rng(3), 1000))
    assert parts == {}
    ev = vb.evaluate(vb.Sequence(stages={"x": stage}), 1000, 3)
    assert ev.parts == {}


CACHED_WAFER = """
name = "cached-wafer"
samples = 2000
seed = 4
[pipeline]
kind = "sequence"
[pipeline.stages.before]
kind = "fixed"
value_ms = 400
[pipeline.stages.llm]
kind = "reply_cache"
hit_rate = 0.4
hit = { kind = "fixed", value_ms = 150 }
[pipeline.stages.llm.miss]
kind = "wafer"
model = "llama-3.3-70b"
hardware = "wse-3"
jitter_cv = 0.0
"""


def test_a_wafer_stage_inside_a_reply_cache_miss_path_gets_its_hosted_path_note(tmp_path: Path) -> None:
    sc = vb.parse_scenario(tomllib.loads(CACHED_WAFER), origin="c.toml")
    res = vb.simulate(sc)
    note = WaferStage.model_validate(WAFER).path_note()
    assert res.wafer_paths["baseline"] == ({"stage": "llm/cache_miss", "path": "hosted", "note": note},)
    path = tmp_path / "c.toml"
    path.write_text(CACHED_WAFER)
    out = runner.invoke(app, ["run", str(path), "-f", "json"])
    assert out.exit_code in (0, 1), out.output
    (row,) = json.loads(out.stdout)["variants"][0]["wafer_paths"]
    assert row["stage"] == "llm/cache_miss"
    assert row["path"] == "hosted"
    table = " ".join(runner.invoke(app, ["run", str(path)]).stdout.split())
    assert "llm/cache_miss: hosted path added: Cerebras Inference API network + overhead" in table


def test_a_wafer_stage_inside_a_council_member_gets_its_note() -> None:
    council = Council.model_validate(
        {"topology": "all", "members": [MEMBER, {"name": "w", "stage": WAFER | {"path": "on-prem"}, "p": 0.9}]}
    )
    (row,) = wafer_paths(vb.Sequence(stages={"llm": council}))
    assert row["stage"] == "llm/w"
    assert row["path"] == "on-prem"


def test_preemptive_and_cache_draw_their_children_by_the_declared_names() -> None:
    # The names children() gives are the streams the stage draws by: the same samples as the engine's.
    cache = ReplyCache.model_validate(EXAMPLES["reply_cache"])
    ev = vb.evaluate(cache.tree(), 500, 7, name="reply_cache")
    assert list(ev.stages) == list(cache.children())
    pre = Preemptive.model_validate(EXAMPLES["preemptive"])
    assert list(pre.children()) == ["generation"]


def test_capacity_finds_and_replaces_the_llm_behind_a_reply_cache(root: Path) -> None:
    from voicebudget.capacity import deployments_from_scenario, plan_capacity

    sc = vb.load_scenario(root / "scenarios" / "support-line.toml")
    gpu = {"kind": "gpu", "model": "llama-3.1-8b", "hardware": "h100-sxm", "chips": 1, "concurrency": 64}
    cached = ReplyCache.model_validate({"hit_rate": 0.5, "hit": {"kind": "fixed", "value_ms": 50.0}, "miss": gpu})
    plain = sc.model_copy(update={"pipeline": sc.pipeline.model_copy(update={"llm": cached.miss})})
    behind = sc.model_copy(update={"pipeline": sc.pipeline.model_copy(update={"llm": cached})})
    (dep,) = deployments_from_scenario(behind, stage="cache_miss")
    assert dep.stage == cached.miss  # type: ignore[attr-defined]
    budget = vb.Budget(total_ms=1000.0)
    with_cache = plan_capacity(behind, [dep], stage="cache_miss", samples=2_000, budget=budget).deployments[0]
    without = plan_capacity(plain, [dep], samples=2_000, budget=budget).deployments[0]
    # Half the turns skip the loaded LLM: at every load both evaluated, the p95 with the cache is earlier,
    # so it carries more calls (measured: 79 vs 67 on one H100).
    both = {p.calls: p.percentile_ms for p in without.curve}
    common = [p for p in with_cache.curve if p.calls in both and np.isfinite(both[p.calls])]
    assert len(common) >= 5
    assert all(p.percentile_ms < both[p.calls] for p in common)
    assert without.max_concurrent_calls is not None
    assert without.max_concurrent_calls > 10
    assert with_cache.max_concurrent_calls is not None
    assert with_cache.max_concurrent_calls > without.max_concurrent_calls
