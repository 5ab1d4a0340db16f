"""The latency algebra: combinators over stage samples, and critical-path tail attribution.

A pipeline is a tree. Leaves are *stages* (a distribution or a model with ``sample(rng, n)``);
inner nodes are combinators, each a frozen pydantic model chosen by ``kind``:

================  ==============================================  ===========================
kind              latency of the node (per turn)                  critical child
================  ==============================================  ===========================
``sequence``      sum of its stages                               all of them, each its own part
``all_of``        max (parallel branches, wait for all)           the slowest
``k_of_n``        k-th smallest (first ``k`` of ``N`` finish)     the k-th to finish
``race``          min (first to finish; ``k_of_n`` with k = 1)    the fastest
``choice``        one branch per turn with probability ``weights``  the branch taken
================  ==============================================  ===========================

Evaluation is vectorised over turns and keeps every node's ``float64[n]`` samples (a run of many
variants draws them into :class:`Buffers` it reuses, :func:`evaluate_into`). Every leaf
draws from its own random stream, derived from the run's seed and the leaf's name, so two variants
of a scenario that share a stage draw the same samples for it (common random numbers), and
``choice`` samples every branch for every turn (then selects), which keeps streams aligned.

The tree is an interface: every stage declares its named sub-stages in :meth:`Stage.children` (a leaf
has none; a combinator its ``stages``; a council its members' stages; a reply cache its hit and miss
paths) and rebuilds itself around new ones with :meth:`Stage.with_children`. :func:`walk` and
:func:`replace` are the one walk over it that the simulator, capacity, tuning and the run report use.

Tail attribution follows the critical path: in each turn the total is the sum of the leaf
contributions along the path that determined it (a ``sequence`` passes through every child; a
``max``/order statistic/choice passes through the one child that set its value), so the
contributions add up exactly to the total, turn by turn.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Self, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, model_validator

from voicebudget._model import DataModel

if TYPE_CHECKING:
    from voicebudget._stages import StageSpec

__all__ = [
    "AllOf",
    "Buffers",
    "Choice",
    "Evaluation",
    "KOfN",
    "Race",
    "Sampler",
    "Sequence",
    "Stage",
    "TreePath",
    "check_unique_names",
    "evaluate",
    "evaluate_into",
    "leaves",
    "replace",
    "stage_rng",
    "walk",
]

FloatArray = NDArray[np.float64]
TreePath = tuple[str, ...]
"""Where a node sits in a stage tree: the names of the sub-stages from the root down (``()``: the root)."""


@runtime_checkable
class Sampler(Protocol):
    """Anything that draws per-turn latencies: ``sample(rng, n) -> float64[n]`` in ms.

    A stage made of parts (a council of members) may also offer ``sample_parts(rng, n) ->
    (float64[n], {part: float64[n]})``: the same samples as ``sample`` for the same ``rng``, plus
    each part's per-turn contribution along its own critical path (summing to the samples). The
    engine then uses it, and reports break the stage's tail share down by part.
    """

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray: ...


class Buffers:
    """Turn-long ``float64[n]`` scratch arrays, lent and taken back, so the stages of a run, their
    intermediate draws and the variants after them reuse memory: a fresh array faults its pages in (at
    10,000,000 turns an 80 MB array, ~20 ms of system time on a loaded machine, more than drawing into it).

    :param n: the length of every buffer (turns).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._free: list[FloatArray] = []
        self._lent: dict[int, FloatArray] = {}

    def take(self) -> FloatArray:
        """A ``float64[n]`` buffer (its content is left over, not zeroed): a returned one, else a new one."""
        buf = self._free.pop() if self._free else np.empty(self.n)
        self._lent[id(buf)] = buf
        return buf

    def give(self, *arrays: Any) -> None:
        """Take buffers back for the next :meth:`take`; arrays not lent by this pool are ignored."""
        for a in arrays:
            if self._lent.pop(id(a), None) is not None:
                self._free.append(a)

    def keep(self, array: Any) -> None:
        """Hand a lent buffer over for good (a report keeps it): never lent again."""
        self._lent.pop(id(array), None)

    def lent(self, array: Any) -> bool:
        """Whether ``array`` is a buffer of this pool out on loan (the borrower may overwrite it)."""
        return id(array) in self._lent


class Stage(DataModel):
    """The interface of a node of the stage tree: every stage kind (distribution, stage model, council,
    reply cache, combinator) and the voice turn derive from it.

    A stage draws per-turn latencies (:meth:`sample`), may break them down by part
    (:meth:`sample_parts`), and declares its named sub-stages (:meth:`children`, none for a leaf), so one
    :func:`walk` reaches every stage of a tree, inside councils and reply caches too.

    :cvar group: ``True`` when the engine evaluates the children as nodes of the tree (a combinator, the
        voice turn), so they are stages of the report; ``False`` when the stage draws its children itself
        (a council, a reply cache, preemptive generation) or has none: to the engine it is one leaf.
    """

    group: ClassVar[bool] = False

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:  # pragma: no cover - every kind overrides
        """Draw ``n`` per-turn latencies.

        :param rng: the source of randomness (passed in, never global).
        :param n: number of samples (turns).
        :returns: ``float64[n]`` latencies in ms, all ``>= 0``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define sample()")

    def sample_parts(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, dict[str, FloatArray]]:
        """The same draws as :meth:`sample` for the same ``rng``, with each part's per-turn contribution
        along the stage's own critical path (``float64[n]`` ms each, summing to the samples).

        The engine draws a stage that overrides this method through it; any other through
        :meth:`sample_into`.

        :returns: ``(samples, {part: contribution})``; a stage without parts gives ``{}`` (the default).
        """
        return self.sample(rng, n), {}

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        """The same draws as :meth:`sample` for the same ``rng``, written into ``out`` when the stage can
        (every distribution, ``llm``, ``tts``, ``network``), its intermediate draws in ``buffers``.

        :param out: ``float64[n]``, overwritten.
        :param buffers: scratch of the same length, lent and given back within the call.
        :returns: ``out`` holding the samples, or (a stage that allocates its own, the default) a new
            ``float64[n]`` array, ``out`` untouched.
        """
        return self.sample(rng, out.shape[0])

    def children(self) -> dict[str, Any]:
        """The named sub-stages, in order; a leaf has none (the default).

        Every field that can hold a stage (``StageSpec``) is here, under the name the stage draws it by
        (its random stream and report row); ``tests/test_stage_tree.py`` checks it for every stage kind.
        """
        return {}

    def with_children(self, children: Mapping[str, Any]) -> Self:
        """A copy with the named sub-stages replaced (not validated: any sampler may stand there).

        :param children: sub-stage name -> the new node; names not given keep their node.
        :raises KeyError: a name that is not one of :meth:`children`.
        """
        if children:
            raise KeyError(f"{type(self).__name__} has no sub-stages; got {sorted(children)}")
        return self


def is_group(node: Any) -> bool:
    """Whether the engine evaluates ``node``'s children as nodes of the tree (see :attr:`Stage.group`)."""
    return isinstance(node, Stage) and node.group


def walk(tree: Any, *, groups_only: bool = False) -> Iterator[tuple[TreePath, Any]]:
    """Every node of a stage tree with its path, parents before children, children in order.

    :param tree: a stage (or any sampler, which is a leaf).
    :param groups_only: descend only into groups (:attr:`Stage.group`): the nodes the engine evaluates,
        a council or reply cache being one leaf. Default: every stage's :meth:`~Stage.children`, into
        council members and cache paths.
    :returns: an iterator of ``(path, node)``, the root first with path ``()``.
    """
    stack: list[tuple[TreePath, Any]] = [((), tree)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if isinstance(node, Stage) and (node.group or not groups_only):
            stack.extend(((*path, name), child) for name, child in reversed(node.children().items()))


def leaves(tree: Any, root: str = "total") -> dict[str, Any]:
    """The leaf stages the engine draws, by the names :func:`evaluate` reports them under.

    :param root: the name of the root when it is itself a leaf.
    :returns: name -> stage, in tree order.
    """
    return {path[-1] if path else root: node for path, node in walk(tree, groups_only=True) if not is_group(node)}


def replace(tree: Any, path: TreePath, node: Any) -> Any:
    """The tree with the node at ``path`` replaced by ``node`` (containers copied, nothing validated).

    :raises KeyError: ``path`` does not lead to a node of the tree.
    """
    if not path:
        return node
    if not isinstance(tree, Stage) or path[0] not in (kids := tree.children()):
        raise KeyError(f"no sub-stage {path[0]!r} in {type(tree).__name__}")
    return tree.with_children({path[0]: replace(kids[path[0]], path[1:], node)})


class _Combinator(Stage):
    model_config = ConfigDict(defer_build=True)

    stages: dict[str, StageSpec] = Field(
        description="Named child stages (distributions, models or combinators); names are unique in a pipeline."
    )

    @model_validator(mode="after")
    def _non_empty(self) -> _Combinator:
        if not self.stages:
            raise ValueError("needs at least one stage")
        check_unique_names((key, f"stages.{key}", child) for key, child in self.stages.items())
        return self

    group: ClassVar[bool] = True

    def children(self) -> dict[str, Any]:
        """The named child stages."""
        return dict(self.stages)

    def with_children(self, children: Mapping[str, Any]) -> Self:
        """A copy with the named child stages replaced (not validated)."""
        unknown = set(children) - set(self.stages)
        if unknown:
            raise KeyError(f"no stage named {sorted(unknown)}; stages: {list(self.stages)}")
        return self.model_copy(update={"stages": {k: children.get(k, v) for k, v in self.stages.items()}})

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """The combined latency per turn, ``float64[n]`` ms: the tree evaluated on one seed drawn from ``rng``."""
        return evaluate(self, n, int(rng.integers(0, 2**63 - 1))).total

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        """Combine child samples; returns the node's samples and, per turn, the index of the child
        on the critical path (an empty array for ``sequence``, where every child is).

        :param out: ``float64[n]`` to write the samples into (it may be ``children[0]``); a kind that
            cannot returns a new array instead. Default: a new array.
        """
        raise NotImplementedError  # pragma: no cover


class Sequence(_Combinator):
    """Stages one after another: the latency is the sum."""

    kind: Literal["sequence"] = "sequence"

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        total = np.empty_like(children[0]) if out is None else out
        with np.errstate(over="ignore"):  # overflow to inf is reported by build_report, by turn count
            if total is children[0] or len(children) == 1:
                if total is not children[0]:
                    np.copyto(total, children[0])
                rest = children[1:]
            else:  # c0 + c1 straight into ``total``: the same sums as copying c0 first, one pass fewer
                np.add(children[0], children[1], out=total)
                rest = children[2:]
            for c in rest:
                total += c
        return total, np.empty(0, dtype=np.int8)


class AllOf(_Combinator):
    """Parallel branches, wait for all: the latency is the max."""

    kind: Literal["all_of"] = "all_of"

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        return _extreme(children, np.greater, out)


class KOfN(_Combinator):
    """First ``k`` of the ``N`` stages to finish: the latency is the k-th order statistic."""

    kind: Literal["k_of_n"] = "k_of_n"
    k: int = Field(ge=1, description="How many stages must finish (1 <= k <= number of stages).")

    @model_validator(mode="after")
    def _k_le_n(self) -> KOfN:
        if self.k > len(self.stages):
            raise ValueError(f"k = {self.k} but only {len(self.stages)} stages; allowed 1..{len(self.stages)}")
        return self

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        stack = np.stack(children)
        order = np.argpartition(stack, self.k - 1, axis=0)
        which: NDArray[Any] = order[self.k - 1]
        return _pick(stack, which), which


class Race(_Combinator):
    """First to finish wins: the latency is the min (``k_of_n`` with ``k = 1``)."""

    kind: Literal["race"] = "race"

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        return _extreme(children, np.less, out)


class Choice(_Combinator):
    """One branch per turn, branch ``i`` with probability ``weights[i]`` (e.g. cache hit vs miss)."""

    kind: Literal["choice"] = "choice"
    weights: tuple[float, ...] = Field(description="Branch probabilities in stage order; >= 0, sum to 1.")

    @model_validator(mode="after")
    def _weights(self) -> Choice:
        if len(self.weights) != len(self.stages):
            raise ValueError(f"weights has {len(self.weights)} entries but there are {len(self.stages)} stages")
        if any(w < 0 for w in self.weights) or abs(sum(self.weights) - 1.0) > 1e-6:
            raise ValueError(f"weights must be >= 0 and sum to 1, got {list(self.weights)}")
        return self

    def combine(
        self, children: list[FloatArray], rng: np.random.Generator, out: FloatArray | None = None
    ) -> tuple[FloatArray, NDArray[Any]]:
        n = children[0].shape[0]
        which: NDArray[Any] = np.asarray(rng.choice(len(children), size=n, p=np.asarray(self.weights)))
        stack = np.stack(children)
        return _pick(stack, which), which


def _extreme(
    children: list[FloatArray], beats: np.ufunc, out: FloatArray | None = None
) -> tuple[FloatArray, NDArray[Any]]:
    """Per turn the max (``beats = np.greater``) or min (``np.less``) of the children and the index of
    the first child that reaches it (as ``argmax``/``argmin`` of their stack, without the
    ``k x n`` stack): one pass per child, the smallest unsigned index type. A NaN in any child gives
    NaN (``np.maximum``/``np.minimum``), which the report refuses as not finite.

    Branch-free: ``np.maximum`` and modular integer arithmetic on the index, not a masked copy or a
    boolean-mask assignment (each ~9 ms on 2,000,000 turns where the winner changes at random, vs
    ~3 ms and ~0.5 ms).
    """
    extreme = np.maximum if beats is np.greater else np.minimum
    best = np.empty_like(children[0]) if out is None else out
    if best is not children[0]:
        np.copyto(best, children[0])
    which = np.zeros(best.shape, dtype=np.min_scalar_type(len(children) - 1))
    wins, step = np.empty(best.shape, dtype=bool), np.empty_like(which)  # one of each for every child
    for i, c in enumerate(children[1:], start=1):
        beats(c, best, out=wins)
        extreme(best, c, out=best)
        np.subtract(which.dtype.type(i), which, out=step)  # modular: which + (i - which) == i where it wins
        step *= wins
        which += step
    return best, which


def _pick(stack: FloatArray, which: NDArray[Any]) -> FloatArray:
    """Per turn, the value of the child ``which[turn]``: ``stack[which[t], t]``."""
    return np.asarray(np.take_along_axis(stack, which[None, :], axis=0)[0], dtype=np.float64)


COMBINATORS: tuple[type[_Combinator], ...] = (Sequence, AllOf, KOfN, Race, Choice)


def check_unique_names(children: Iterable[tuple[str, str, Any]], reserved: Mapping[str, str] | None = None) -> None:
    """Refuse two stages of one evaluated tree with the same name, at any depth (each names a report row
    and seeds its own random stream, :func:`stage_rng`).

    :param children: ``(name, field path, stage)`` of a node's named children; the stages of a
        combinator child are walked too (``<path>.stages.<name>``).
    :param reserved: names the node itself gives (a voice turn's ``turn_commit``) -> what they are.
    :raises ValueError: a repeated name, naming both field paths.
    """
    seen = dict(reserved or {})
    for name, field_path, child in children:
        for path, _ in walk(child, groups_only=True):
            key = path[-1] if path else name
            where = field_path + "".join(f".stages.{k}" for k in path)
            if key in seen:
                raise ValueError(
                    f"two stages are named {key[:80]!r} ({seen[key]} and {where}); stage names must be unique "
                    "in a pipeline"
                )
            seen[key] = where


def stage_rng(seed: int, name: str) -> np.random.Generator:
    """The random stream of stage ``name`` in a run seeded with ``seed``.

    Derived with :class:`numpy.random.SeedSequence` from ``(seed, crc32(name))``, so a stage's
    samples depend only on the seed, its name and its own spec (common random numbers).
    """
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(key,))))


@dataclass
class _Node:
    name: str
    samples: FloatArray
    children: list[_Node] = field(default_factory=list)
    which: NDArray[Any] | None = None  # critical child per turn; None for leaves and sequences

    def walk(self) -> Iterator[_Node]:
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class Evaluation:
    """Every node's samples from one evaluation of a pipeline tree.

    :ivar total: ``float64[n_turns]`` latency of the root, ms.
    :ivar stages: leaf stage name -> ``float64[n_turns]`` ms, in tree order.
    :ivar groups: combinator name -> ``float64[n_turns]`` ms.
    """

    total: FloatArray
    stages: dict[str, FloatArray]
    groups: dict[str, FloatArray]
    root: _Node
    parts: dict[str, dict[str, FloatArray]] = field(default_factory=dict)
    """Leaf stage -> its parts' per-turn critical-path contributions (``float64[n_turns]`` each, summing
    to the leaf's samples), for leaves that report them (``sample_parts``, e.g. a council's members)."""

    def part_contributions(self, turns: NDArray[np.intp]) -> dict[str, dict[str, FloatArray]]:
        """Each reporting leaf's contribution in the given turns, split into its parts.

        :param turns: ``intp[m]`` turn indices.
        :returns: leaf -> part -> ``float64[m]`` ms; per turn a leaf's parts sum to the leaf's
            :meth:`contributions` (zero in turns where the leaf is off the critical path).
        """
        leaf = self.contributions(turns)
        out: dict[str, dict[str, FloatArray]] = {}
        for name, parts in self.parts.items():
            own = self.stages[name][turns]
            on_path = np.divide(leaf[name], own, out=np.zeros_like(own), where=own > 0)
            out[name] = {part: values[turns] * on_path for part, values in parts.items()}
        return out

    def contributions(self, turns: NDArray[np.intp]) -> dict[str, FloatArray]:
        """Critical-path contribution of every leaf stage in the given turns.

        :param turns: ``intp[m]`` turn indices (e.g. the tail beyond p95).
        :returns: stage name -> ``float64[m]`` ms; per turn they sum to ``total[turns]``.
        """
        out: dict[str, FloatArray] = {name: np.zeros(turns.size) for name in self.stages}
        _attribute(self.root, turns, np.ones(turns.size, dtype=bool), out)
        return out


def _attribute(node: _Node, turns: NDArray[np.intp], active: NDArray[np.bool_], out: dict[str, FloatArray]) -> None:
    if not node.children:
        out[node.name] += np.where(active, node.samples[turns], 0.0)
        return
    if node.which is None:
        for c in node.children:
            _attribute(c, turns, active, out)
        return
    which = node.which[turns]
    for i, c in enumerate(node.children):
        _attribute(c, turns, active & (which == i), out)


def evaluate(node: Any, n: int, seed: int, name: str = "total") -> Evaluation:
    """Evaluate a pipeline tree for ``n`` turns.

    :param node: a combinator or a leaf stage (anything with ``sample(rng, n)``).
    :param n: number of simulated turns.
    :param seed: the run's seed; each leaf draws from :func:`stage_rng` ``(seed, leaf name)``.
    :param name: the root's name.
    :returns: an :class:`Evaluation`.
    :raises ValueError: two stages in the tree share a name.
    """
    return evaluate_into(node, n, seed, Buffers(n), name, keep_groups=True)


def evaluate_into(
    node: Any, n: int, seed: int, buffers: Buffers, name: str = "total", *, keep_groups: bool = False
) -> Evaluation:
    """:func:`evaluate` with the leaves drawn into ``buffers`` and the combinators computed in them (the
    same samples): what a run of many variants calls, giving the buffers back after each.

    :param buffers: the run's scratch, ``n`` long; the leaves' and the total's arrays are lent from it
        (:meth:`Buffers.lent`) when their stage can draw into one (:meth:`Stage.sample_into`).
    :param keep_groups: keep each combinator's samples in :attr:`Evaluation.groups`; without, a
        combinator's buffer is reused by its parent (the total is computed in the first child's) or given
        back once its parent has combined it, and ``groups`` stays empty.
    """
    acc = _Acc(n, seed, buffers, keep_groups)
    root = _eval(node, name, acc, root=True)
    return Evaluation(total=root.samples, stages=acc.stages, groups=acc.groups, root=root, parts=acc.parts)


@dataclass
class _Acc:
    """What one evaluation collects while it walks the tree."""

    n: int
    seed: int
    buffers: Buffers
    keep_groups: bool
    stages: dict[str, FloatArray] = field(default_factory=dict)
    groups: dict[str, FloatArray] = field(default_factory=dict)
    group_names: set[str] = field(default_factory=set)
    parts: dict[str, dict[str, FloatArray]] = field(default_factory=dict)


_SPENT = np.empty(0)
"""The samples of a combinator whose buffer went to its parent (``evaluate_into(keep_groups=False)``)."""


def _eval(node: Any, name: str, acc: _Acc, root: bool = False) -> _Node:
    if isinstance(node, _Combinator):
        kids = [_eval(child, key, acc) for key, child in node.children().items()]
        first = kids[0]
        reuse = not acc.keep_groups and first.children and acc.buffers.lent(first.samples)
        out = first.samples if reuse else acc.buffers.take()
        samples, which = node.combine([k.samples for k in kids], stage_rng(acc.seed, name + "/choice"), out)
        if samples is not out:
            acc.buffers.give(out)
        if not acc.keep_groups:  # a combinator's own samples serve its parent only
            for k in kids:
                if k.children:
                    if k.samples is not samples:
                        acc.buffers.give(k.samples)
                    k.samples = _SPENT
        if not root:  # the root is the total (a council member's name, "total"): a stage may share its name
            _claim(name, acc.stages, acc.group_names)
        acc.group_names.add(name)
        if acc.keep_groups:
            acc.groups.setdefault(name, samples)
        return _Node(name, samples, kids, which if which.size else None)
    _claim(name, acc.stages, acc.group_names)
    samples = _draw(node, name, acc)
    if samples.shape != (acc.n,):
        raise ValueError(f"stage {name!r} returned shape {samples.shape}, expected ({acc.n},)")
    acc.stages[name] = samples
    return _Node(name, samples)


def _draw(node: Any, name: str, acc: _Acc) -> FloatArray:
    """A leaf's samples: into a lent buffer when the stage can, through ``sample_parts`` when it reports
    parts (a council), through ``sample`` for any other sampler."""
    rng = stage_rng(acc.seed, name)
    if not isinstance(node, Stage):  # any other sampler
        return np.asarray(node.sample(rng, acc.n), dtype=np.float64)
    if type(node).sample_parts is not Stage.sample_parts:  # a stage can say which of its parts set each turn
        drawn, leaf_parts = node.sample_parts(rng, acc.n)
        if leaf_parts:
            acc.parts[name] = {k: np.asarray(v, dtype=np.float64) for k, v in leaf_parts.items()}
        return np.asarray(drawn, dtype=np.float64)
    out = acc.buffers.take()
    drawn = node.sample_into(rng, out, acc.buffers)
    if drawn is not out:
        acc.buffers.give(out)
    return np.asarray(drawn, dtype=np.float64)


def _claim(name: str, *seen: Collection[str]) -> None:
    if any(name in s for s in seen):
        raise ValueError(f"two stages are named {name!r}; stage names must be unique in a pipeline")
