"""Council configurations: members, topology, router, aggregator, scorer. Pure, validated data.

A council is also a stage (``kind = "council"``): in a scenario the ``llm`` stage can be a council
given inline or as ``file = "councils/x.toml"`` (resolved against the scenario's folder). Building a
:class:`Council` touches no disk except through ``file``, read once at validation like
:class:`~voicebudget.Empirical`; :func:`load_council` is the explicit entry point.

Member stages are any :data:`~voicebudget.StageSpec`; the forward reference is resolved in
``voicebudget/_stages.py`` once the union exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from voicebudget._algebra import Stage
from voicebudget._budget import MAX_LATENCY_MS, MAX_TOKENS, MAX_USD, Budget
from voicebudget._distributions import Distribution
from voicebudget._errors import ScenarioError
from voicebudget._io import (
    Roots,
    check_cycle,
    read_document,
    reference_context,
    refuse_other_document,
    resolve_reference,
    validation_error,
)
from voicebudget._model import DataModel
from voicebudget._plausible import implausible_values, warn_each
from voicebudget.councils._topologies import TOPOLOGIES, CouncilTopology, get_topology, topology_names

if TYPE_CHECKING:
    from voicebudget._stages import StageSpec

__all__ = ["Aggregator", "Council", "Member", "Router", "Scorer", "Topology", "UserTime", "load_council"]

Topology = str
"""A council topology's name: a key of :data:`~voicebudget.councils._topologies.TOPOLOGIES` (``all``,
``first_k``, ``vote``, ``router``, ``cascade``)."""
RESERVED_NAMES = frozenset({"router", "aggregator", "scorer"})
FloatArray = NDArray[np.float64]


class _Model(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


class _Priced(_Model):
    prompt_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS, description="Input tokens per call.")
    output_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS, description="Output tokens per call.")
    input_usd_per_mtok: float = Field(default=0.0, ge=0, le=MAX_USD, description="Price per million input tokens, USD.")
    output_usd_per_mtok: float = Field(
        default=0.0, ge=0, le=MAX_USD, description="Price per million output tokens, USD."
    )
    usd_per_call: float = Field(default=0.0, ge=0, le=MAX_USD, description="Flat price per call, USD.")

    def cost_usd(self, extra_prompt_tokens: float = 0.0) -> float:
        """Price of one call in USD (``extra_prompt_tokens`` are added to ``prompt_tokens``)."""
        prompt = self.prompt_tokens + extra_prompt_tokens
        per_mtok = prompt * self.input_usd_per_mtok + self.output_tokens * self.output_usd_per_mtok
        return per_mtok / 1e6 + self.usd_per_call


class Member(_Priced):
    """One council member: an LLM stage, its correctness and its price.

    :param name: unique in the council (not ``router``, ``aggregator`` or ``scorer``).
    :param stage: any stage kind (``llm``, a distribution, ``gpu``/``wafer``/``api``...). Its samples
        are the member's latency to the answer the council needs: the *complete* answer for ``all``,
        ``first_k``, ``vote`` and the non-final members of a ``cascade`` (for an ``llm`` stage, set
        ``first_phrase_tokens`` to the answer length), the first speakable phrase for a ``router``.
    :param p: probability the member's answer is right, in [0, 1] (one greedy, temperature-0 call).
    :param p_sampled: accuracy of one *sampled* call (temperature > 0), usually below ``p``. Members
        that are samples of one model (names ``m``, ``m#2``, ``m#3``... as the tuner's
        ``repeat = true`` writes them) answer with it: greedy copies would all say the same thing.
    :param p_off: router only: correctness on turns meant for another member (default ``p``).
    :param share: router only: share of turns meant for this member (shares sum to 1).
    :param output_tokens: tokens the member writes (priced; an aggregator reads them).
    """

    model_config = ConfigDict(defer_build=True)

    plausible_as: ClassVar[Mapping[str, str]] = {"stage": "llm"}
    name: str = Field(min_length=1)
    stage: StageSpec
    p: float = Field(ge=0, le=1)
    p_sampled: float | None = Field(default=None, ge=0, le=1)
    p_off: float | None = Field(default=None, ge=0, le=1)
    share: float | None = Field(default=None, ge=0, le=1)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v in RESERVED_NAMES:
            raise ValueError(f"{v!r} is reserved; pick another member name (reserved: {sorted(RESERVED_NAMES)})")
        return v


class Router(_Priced):
    """A router that sends each turn to one member.

    :param latency: time to decide, ms (a classifier or a small LLM call).
    :param accuracy: probability a turn goes to the member it is meant for, in [0, 1].
    """

    latency: Distribution
    accuracy: float = Field(ge=0, le=1)


class Scorer(_Priced):
    """The cascade's judge: accepts a member's answer or escalates to the next member.

    :param latency: time to score one answer, ms.
    :param accept_if_correct: probability a right answer is accepted (true-positive rate).
    :param accept_if_wrong: probability a wrong answer is accepted (false-accept rate).
    """

    latency: Distribution
    accept_if_correct: float = Field(ge=0, le=1)
    accept_if_wrong: float = Field(ge=0, le=1)


class Aggregator(_Priced):
    """An LLM that reads the members' answers and writes the reply.

    Per turn: ``ttft + prefill_ms_per_token * (output tokens of the members it read)
    + first_phrase_tokens * tpot``; the members' answers are extra prompt tokens (priced).

    :param ttft: TTFT for its own prompt without the members' answers, ms.
    :param prefill_ms_per_token: prefill time per extra prompt token, ms/token.
    :param tpot: time per output token, ms/token (default: none, i.e. 0).
    :param first_phrase_tokens: tokens until the first speakable phrase.
    """

    ttft: Distribution
    prefill_ms_per_token: float = Field(default=0.0, ge=0)
    tpot: Distribution | None = None
    first_phrase_tokens: int = Field(default=0, ge=0)


class UserTime(_Model):
    """Inputs of the expected user time per completed request, ``X * (T_user + L + T_agent)``.

    ``X = 1 + e / (1 - e_r)`` exchanges: the first, plus on an error (rate ``e``) repairs that each
    fail with probability ``e_r``. A fast wrong answer costs a whole extra exchange.

    :param user_turn_ms: ``T_user``, the user's speaking time per exchange. Assumption 2500 ms
        (a short request); replace with your own conversations' figure.
    :param agent_turn_ms: ``T_agent``, the agent's speaking time per exchange. Assumption 4000 ms.
    :param repair_error_rate: ``e_r`` in [0, 1); default: the answer's own error rate ``e``
        (then ``X = 1 / (1 - e)``).
    :param other_latency_ms: latency of the rest of the voice turn (endpointing, ASR, TTS,
        transport) added to the evaluated part's mean to give ``L``; default 0.
    """

    user_turn_ms: float = Field(default=2500.0, ge=0, le=MAX_LATENCY_MS)
    agent_turn_ms: float = Field(default=4000.0, ge=0, le=MAX_LATENCY_MS)
    repair_error_rate: float | None = Field(default=None, ge=0, lt=1)
    other_latency_ms: float = Field(default=0.0, ge=0, le=MAX_LATENCY_MS)

    def exchanges(self, error_rate: float) -> float:
        """``X = 1 + e / (1 - e_r)``; ``inf`` when every repair fails."""
        e_r = error_rate if self.repair_error_rate is None else self.repair_error_rate
        return float("inf") if e_r >= 1 else 1.0 + error_rate / (1.0 - e_r)

    def expected_ms(self, error_rate: float, mean_latency_ms: float) -> float:
        """Expected user time per completed request, ms: ``X * (T_user + L + T_agent)``."""
        latency = mean_latency_ms + self.other_latency_ms
        return self.exchanges(error_rate) * (self.user_turn_ms + latency + self.agent_turn_ms)


def _topology_of(info: ValidationInfo) -> CouncilTopology | None:
    """The topology validated so far (``None`` when it was missing or unknown: its own error says so)."""
    name = info.data.get("topology")
    return TOPOLOGIES.get(name) if isinstance(name, str) else None


def _check_shares(topology: str, shares: list[float | None]) -> None:
    """A router's members each have a share of the turns, and the shares sum to 1.

    :raises ValueError: (inside a pydantic validator) a share missing, or a sum other than 1.
    """
    if any(s is None for s in shares):
        raise ValueError(f"topology {topology!r} needs a share (of turns meant for it) on every member")
    if abs(sum(s or 0.0 for s in shares) - 1.0) > 1e-6:
        raise ValueError(f"members' shares must sum to 1, got {sum(s or 0.0 for s in shares):g}")


def _members_of(info: ValidationInfo) -> tuple[Member, ...]:
    members = info.data.get("members")
    return tuple(members) if members else ()


class Council(Stage):
    """A council of models answering one turn (docs/design.md section 5). Usable as a stage.

    :param topology: ``all`` (wait for every member), ``first_k`` (the first ``k`` to finish),
        ``vote`` (stop when ``m`` answers agree), ``router`` (one member per turn), ``cascade``
        (members in order; a scorer accepts or escalates).
    :param members: the members, at least one.
    :param rho: error correlation between members, in [0, 1) (see :mod:`._quality`).
    :param rule: how ``all``/``first_k`` combine answers: ``majority``, ``weighted`` (log-odds
        weights) or ``gain`` (free-form aggregation with accuracy ``gain[j - 1]`` from ``j`` answers).
    :param k: ``first_k`` only: how many members to wait for (1..N).
    :param m: ``vote`` only: agreeing answers needed to stop (1..N).
    :param answers: the answer space for ``all``/``first_k``/``vote``: ``2`` (yes/no), an integer
        ``K`` (e.g. 40 intents) or ``"open"`` (free-form). Unset: right/wrong answers where wrong ones
        agree (today's binary model). Set: plurality over the space
        (:func:`~voicebudget.councils.plurality_accuracy`).
    :param wrong_concentration: with ``answers``: share of the wrong answers' probability on the most
        common wrong answer, ``[1/(K-1), 1]`` (``[0, 1]`` for ``"open"``); needed unless
        ``answers = 2``.
    :param unsolved: with ``answers``: share of items no member gets right, [0, 1).
    :param file: read the council from this file (relative to the scenario's folder); other fields
        given beside it override the file's.
    """

    model_config = ConfigDict(defer_build=True)

    kind: Literal["council"] = "council"
    name: str = Field(default="council", min_length=1)
    description: str = ""
    topology: Topology = Field(json_schema_extra={"enum": list(TOPOLOGIES)})
    members: tuple[Member, ...] = Field(min_length=1)
    rho: float = Field(default=0.0, ge=0, lt=1)
    answers: int | Literal["open"] | None = None
    wrong_concentration: float | None = Field(default=None, ge=0, le=1)
    unsolved: float = Field(default=0.0, ge=0, lt=1)
    rule: Literal["majority", "weighted", "gain"] = "majority"
    k: int | None = Field(default=None, validate_default=True)
    m: int | None = Field(default=None, validate_default=True)
    gain: tuple[float, ...] | None = Field(default=None, validate_default=True)
    router: Router | None = Field(default=None, validate_default=True)
    scorer: Scorer | None = Field(default=None, validate_default=True)
    aggregator: Aggregator | None = Field(default=None, validate_default=True)
    user_time: UserTime = Field(default_factory=UserTime)
    budget: Budget = Field(default_factory=Budget)
    samples: int = Field(default=20_000, ge=1)
    seed: int = Field(default=1, ge=0)

    _origin: str = PrivateAttr(default="")

    @property
    def origin(self) -> str:
        """The file this council was read from (``""`` when built in code); errors raised while it is
        evaluated name it, and a member's stage by its field path (``members.0.stage``)."""
        return self._origin

    @model_validator(mode="before")
    @classmethod
    def _read_file(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or data.get("file") is None:
            return data
        path = resolve_reference(data["file"], info.context)
        try:
            council = _load_council(path, {k: v for k, v in data.items() if k != "file"}, info.context)
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None
        return _inline(council.model_dump(mode="python"))

    @field_validator("answers", mode="before")
    @classmethod
    def _check_answers(cls, v: Any) -> Any:
        if v is None or v == "open" and isinstance(v, str):
            return v
        if isinstance(v, bool) or not isinstance(v, int) or v < 2:
            raise ValueError(f"answers must be an integer >= 2 (yes/no: 2, K options: K) or 'open', got {v!r}")
        return v

    @model_validator(mode="after")
    def _check_answer_space(self) -> Council:
        from voicebudget.councils._plurality import check_answer_space

        if self.answers is None:
            if self.wrong_concentration is not None or self.unsolved:
                raise ValueError("wrong_concentration and unsolved describe an answer space: set answers too")
            return self
        if self.wrong_concentration is None and self.answers != 2:
            raise ValueError(
                f"answers = {self.answers!r} needs wrong_concentration: the share of wrong answers on the most "
                "common wrong answer (1: they all agree; 1/(K-1): uniform; 0 for 'open': they never agree)"
            )
        try:
            check_answer_space(self.answers, self.concentration, self.unsolved)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        worst = max(self.p)
        if worst > 1 - self.unsolved + 1e-12:
            raise ValueError(
                f"unsolved = {self.unsolved:g} but a member answers right with p = {worst:g} "
                f"(> 1 - unsolved); no member is right on unsolved items"
            )
        return self

    @field_validator("members")
    @classmethod
    def _unique_names(cls, v: tuple[Member, ...]) -> tuple[Member, ...]:
        names = [mb.name for mb in v]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"member names must be unique; repeated: {dup}")
        return v

    @field_validator("topology")
    @classmethod
    def _known_topology(cls, v: str) -> str:
        get_topology(v)
        return v

    @field_validator("k", "m")
    @classmethod
    def _check_count(cls, v: int | None, info: ValidationInfo) -> int | None:
        n = len(_members_of(info))
        topology = _topology_of(info)
        if topology is not None and topology.needs == info.field_name:
            if v is None:
                raise ValueError(f"topology {topology.name!r} needs {topology.needs_doc} (1..{n})")
            if n and not 1 <= v <= n:
                raise ValueError(f"{info.field_name} = {v} but the council has {n} members; allowed 1..{n}")
        return v

    @field_validator("gain")
    @classmethod
    def _check_gain(cls, v: tuple[float, ...] | None, info: ValidationInfo) -> tuple[float, ...] | None:
        n = len(_members_of(info))
        if info.data.get("rule") == "gain" and (v is None or len(v) < n):
            raise ValueError(f"rule 'gain' needs gain, the accuracy after reading 1..{n} answers ({n} values)")
        if v is not None and any(not 0 <= g <= 1 for g in v):
            raise ValueError(f"gain values must be in [0, 1], got {list(v)}")
        if info.data.get("rule") == "weighted" and n > 16:
            raise ValueError(f"rule 'weighted' is exact up to 16 members, got {n}")
        return v

    @field_validator("router")
    @classmethod
    def _check_router(cls, v: Router | None, info: ValidationInfo) -> Router | None:
        topology = _topology_of(info)
        if topology is None or not topology.uses_router:
            if v is not None:
                raise ValueError(f"a router is only used by topology {topology_names(lambda t: t.uses_router)}")
            return v
        if v is None:
            raise ValueError(f"topology {topology.name!r} needs a router table (latency, accuracy)")
        members = _members_of(info)
        if members:
            _check_shares(topology.name, [mb.share for mb in members])
        return v

    @field_validator("scorer")
    @classmethod
    def _check_scorer(cls, v: Scorer | None, info: ValidationInfo) -> Scorer | None:
        topology = _topology_of(info)
        uses = topology is not None and topology.uses_scorer
        if topology is not None and uses and v is None:
            raise ValueError(
                f"topology {topology.name!r} needs a scorer table (latency, accept_if_correct, accept_if_wrong)"
            )
        if not uses and v is not None:
            raise ValueError(f"a scorer is only used by topology {topology_names(lambda t: t.uses_scorer)}")
        return v

    @field_validator("aggregator")
    @classmethod
    def _check_aggregator(cls, v: Aggregator | None, info: ValidationInfo) -> Aggregator | None:
        topology = _topology_of(info)
        if v is not None and topology is not None and not topology.reads_answers:
            names = topology_names(lambda t: t.reads_answers)
            raise ValueError(f"an aggregator reads several answers: topologies {names}")
        return v

    @property
    def topology_model(self) -> CouncilTopology:
        """The :class:`~voicebudget.councils._topologies.CouncilTopology` that ``topology`` names."""
        return get_topology(self.topology)

    @property
    def p(self) -> list[float]:
        """Members' correctness, in member order: ``p_sampled`` for members that are samples of one
        model (several members named ``m``, ``m#2``...), else ``p``."""
        bases = [mb.name.split("#", 1)[0] for mb in self.members]
        return [
            mb.p_sampled if mb.p_sampled is not None and bases.count(base) > 1 else mb.p
            for mb, base in zip(self.members, bases, strict=True)
        ]

    @property
    def concentration(self) -> float:
        """``wrong_concentration``, 1 when unset (wrong answers agree)."""
        return 1.0 if self.wrong_concentration is None else self.wrong_concentration

    def children(self) -> dict[str, Any]:
        """The members' stages by member name (the names their samples are drawn by)."""
        return {mb.name: mb.stage for mb in self.members}

    def with_children(self, children: Mapping[str, Any]) -> Council:
        """A copy with the named members' stages replaced (not validated)."""
        unknown = set(children) - {mb.name for mb in self.members}
        if unknown:
            raise KeyError(f"no member named {sorted(unknown)}; members: {[mb.name for mb in self.members]}")
        members = tuple(
            mb.model_copy(update={"stage": children[mb.name]}) if mb.name in children else mb for mb in self.members
        )
        return self.model_copy(update={"members": members})

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Council latency per turn, ms (``float64[n]``), so a council can stand as a stage.

        One integer seed is drawn from ``rng``; members draw from streams derived from it and their
        names (:func:`voicebudget.stage_rng`), as in :func:`evaluate_council`.
        """
        return self.sample_parts(rng, n)[0]

    def sample_parts(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, dict[str, FloatArray]]:
        """The same draws as :meth:`sample`, with each component's (member, router, scorer,
        aggregator) per-turn contribution along the council's critical path, ``float64[n]`` ms each,
        summing to the latency; so a scenario report can say which member drives the tail."""
        from voicebudget.councils._latency import sample_council

        draws = sample_council(self, n, int(rng.integers(0, 2**63 - 1)))
        return draws.total, draws.critical


def _inline(doc: Any) -> Any:
    """A dumped council with files already read: drop ``file`` where ``samples_ms`` holds its content."""
    if isinstance(doc, dict):
        return {k: _inline(v) for k, v in doc.items() if not (k == "file" and doc.get("samples_ms") is not None)}
    if isinstance(doc, list | tuple):
        return [_inline(v) for v in doc]
    return doc


def load_council(
    path: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    allowed_roots: Roots = (),
) -> Council:
    """Read and validate a council file (``.toml``, ``.yaml`` or ``.yml``).

    A top-level ``[search]`` table (the tuner's search space, see docs/tuning.md) is ignored: the
    file's base council is what is loaded. ``file`` references (member stages, empirical samples)
    resolve against the file's folder and must stay under it, the working directory or
    ``allowed_roots`` (see :func:`voicebudget._io.reference_context`).

    :param overrides: top-level fields that replace the file's (used by ``file = ...`` in scenarios).
    :param allowed_roots: further folders that ``file`` references may read from.
    :raises ScenarioError: missing/unreadable file or invalid content; the message names the file,
        the field path (e.g. ``members.2.p``) and what is allowed; council files that reference each
        other in a cycle (the message lists them).
    :warns ImplausibleValue: one per value outside the plausible range of what it measures (a member's
        sub-millisecond answer, a budget under 50 ms; :mod:`voicebudget._plausible`).
    """
    council = _load_council(Path(path), overrides, None, allowed_roots)
    warn_each(f"{council.origin}: {field}: {message}" for field, message in implausible_values(council))
    return council


def _load_council(
    path: Path,
    overrides: dict[str, Any] | None,
    parent: Mapping[str, Any] | None,
    allowed_roots: Roots = (),
) -> Council:
    """Load a council file; ``parent`` is the validation context of the document that references it."""
    check_cycle(path, parent)
    context = reference_context(path, allowed_roots=allowed_roots, parent=parent)
    fields = {*Council.model_fields, "search"}
    doc = read_document(path, fields=fields, regular_only=parent is not None)
    refuse_other_document(doc, "council", str(path))
    data = {**doc, **(overrides or {})}
    data.pop("search", None)  # the tuner's search space (voicebudget tune); the base council is evaluated
    try:
        council = Council.model_validate(data, context=context)
    except ValidationError as exc:
        raise validation_error(exc, str(path), data, schema=Council.model_json_schema()) from None
    council._origin = str(path)
    return council
