"""The pool of members the tuner draws councils from: each member at every batch policy (its modelled
stages at that concurrency, prices rescaled by chip time per token), named apart when repeated."""

from __future__ import annotations

from typing import Any

from voicebudget._algebra import replace as replace_node
from voicebudget._algebra import walk
from voicebudget.councils._config import Member
from voicebudget.inference._stage import ModelledStage, _max_tokens

__all__ = [
    "MATERIAL_MS",
    "batch_sensitive",
    "name_members",
    "normalise_shares",
    "prepared_members",
    "price_factors",
]

MATERIAL_MS = 0.05
"""A batch policy that moves a member's modelled call (``TTFT + first_phrase_tokens x TPOT`` of every
modelled stage in it, at the largest token count) by less than this, ms, and its prices not at all,
changes nothing the tuner reports (latencies are printed to 0.1 ms): such a member gets no
``concurrency`` knob. E.g. Qwen3-235B on WSE-3 at 64 in flight needs a 13th wafer for its KV cache,
which moves its 4-token call by 0.009 ms and, with no chip price for a wafer, not its price."""


def prepared_members(pool: dict[str, Member], concurrencies: tuple[int, ...]) -> dict[tuple[str, int | None], Member]:
    """Every pool member once per batch policy: its modelled stages at that concurrency (validated, so a
    deployment that does not fit fails here), its prices rescaled by :func:`price_factors`."""
    factors = price_factors(pool, concurrencies) if concurrencies else {}
    out: dict[tuple[str, int | None], Member] = {}
    for name, member in pool.items():
        out[(name, None)] = member
        for conc in concurrencies:
            stage = _set_concurrency(member.stage, conc)
            out[(name, conc)] = _scale_prices(
                member.model_copy(update={"stage": stage}), factors.get((name, conc), 1.0)
            )
    return out


def name_members(members: list[Member]) -> list[Member]:
    """Repeated pool members get distinct names (``name#2``), hence independent samples."""
    seen: dict[str, int] = {}
    out = []
    for mb in members:
        count = seen.get(mb.name, 0) + 1
        seen[mb.name] = count
        out.append(mb if count == 1 else mb.model_copy(update={"name": f"{mb.name}#{count}"}))
    return out


def normalise_shares(members: list[Member]) -> list[Member]:
    """A router over a subset of the pool: renormalise the subset's shares to sum to 1."""
    shares = [mb.share for mb in members]
    if any(s is None for s in shares):
        return members
    total = float(sum(s for s in shares if s is not None))
    if total <= 0:
        return members
    return [mb.model_copy(update={"share": (mb.share or 0.0) / total}) for mb in members]


def batch_sensitive(members: dict[tuple[str, int | None], Member], concurrencies: tuple[int, ...]) -> frozenset[str]:
    """Pool members whose price, or modelled call latency by :data:`MATERIAL_MS` or more, differs
    between the batch policies tried."""
    out = set()
    for name in {name for name, _ in members}:
        prices, calls = set(), []
        for conc in concurrencies:
            mb = members[(name, conc)]
            prices.add((mb.input_usd_per_mtok, mb.output_usd_per_mtok, mb.usd_per_call))
            calls.append(sum(_call_ms(stage) for stage in _modelled_objects(mb.stage)))
        if len(prices) > 1 or (calls and max(calls) - min(calls) >= MATERIAL_MS):
            out.add(name)
    return frozenset(out)


def _call_ms(stage: ModelledStage) -> float:
    """A modelled stage's call at its largest first-phrase token count, ms."""
    r = stage.predict()
    return float(r.ttft_ms + _max_tokens(stage.first_phrase_tokens) * r.tpot_ms)


def _modelled_objects(stage: Any) -> list[ModelledStage]:
    """The modelled stages (an LLM on given hardware) anywhere in a stage tree, councils and caches included."""
    return [node for _, node in walk(stage) if isinstance(node, ModelledStage)]


def _scale_prices(member: Member, factor: float) -> Member:
    if factor == 1.0:
        return member
    keys = ("input_usd_per_mtok", "output_usd_per_mtok", "usd_per_call")
    return member.model_copy(update={k: getattr(member, k) * factor for k in keys})


def price_factors(pool: dict[str, Member], concurrencies: tuple[int, ...]) -> dict[tuple[str, int], float]:
    """How a self-hosted member's price moves with the batch policy.

    Cost per token is chip time per token: ``chips * T_step(B) / B`` (docs/design.md section 4), so
    a member on ``gpu``/``wafer`` hardware declared at concurrency ``B0`` costs
    ``cost(B) / cost(B0)`` times its declared prices at concurrency ``B`` (the fast-mode trade).
    Members without a modelled stage keep their prices (factor 1).

    :returns: ``(member name, concurrency) -> price factor``.
    """
    out: dict[tuple[str, int], float] = {}
    for name, member in pool.items():
        stages = _modelled_objects(member.stage)
        if not stages:
            continue
        base = stages[0].predict().cost_per_million_output_tokens
        if not base:
            continue  # no chip price for this hardware: keep the declared prices
        for conc in concurrencies:
            cost = stages[0].with_concurrency(conc).predict().cost_per_million_output_tokens
            out[(name, conc)] = (cost or base) / base
    return out


def _set_concurrency(stage: Any, concurrency: int) -> Any:
    """The stage tree with the batch policy (``concurrency``) of every modelled stage in it set."""
    for path, node in list(walk(stage)):
        if isinstance(node, ModelledStage):
            stage = replace_node(stage, path, node.with_concurrency(concurrency))
    return stage
