"""The stages of semantic gradient descent, each a small `Transform`."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs
from returns.result import Failure, Success

from .._aggregate import concat_texts
from .._backward import backward as backward_program
from .._backward import checked_rule
from .._errors import ProtocolError
from .._example import Example
from .._forward import forward
from .._frozen import FrozenMap
from .._gradients import Gradients, merge_gradients
from .._graph import Graph, Params
from .._parse import parse_tagged
from .._program import Program, ask, bind, gather, map_, pure
from .._prompts import render_critique, render_examples, render_rewrite
from .._requests import LLMRequest, LLMResponse, request_key
from .._rules import Rule, neighbor_aware
from .._sampling import merged_options
from .._scoring import Loss, Score, check_loss
from .._system import SystemRef, occurrences, run_system
from .._trace import Trace
from ._base import EmptyState, InstructionExample, ParamGradient, Proposal, Step, Transform, apply_updates, require
from ._bounds import MIN_ALPHA, paired_lower_bound

__all__ = [
    "DRAWS",
    "GATE_RULES",
    "BackwardState",
    "GateState",
    "MomentumState",
    "SelectState",
    "SwitchState",
    "after_first_accept",
    "aggregate",
    "backpropagate",
    "critique",
    "evaluate",
    "full_update",
    "momentum",
    "official_generator",
    "one_at_a_time",
    "propose_rewrite",
    "sample_update",
    "select_error_samples",
    "validation_gate",
]


T = TypeVar("T")


def _rng(seed: int, iteration: int, stage: str) -> random.Random:
    return random.Random(f"{stage}:{seed}:{iteration}")


#: How `select_error_samples` draws its samples: ``"official"`` as the paper's code does (one
#: generator seeded once, after the split's shuffles, each draw depending on every earlier one),
#: ``"per-iteration"`` from a generator seeded afresh each iteration, the picks sorted.
DRAWS = ("official", "per-iteration")


@attrs.frozen
class SelectState:
    """The seed of `select_error_samples`, and the official draw's history.

    Attributes:
        seed: The selection seed.
        draws: Under the official draw, each earlier draw as ``(population, picks)``: the
            generator is the seeded one after the split's shuffles and these draws, so a
            resumed run goes on drawing as an uninterrupted one would.
    """

    seed: int
    draws: tuple[tuple[int, int], ...] = ()


def official_generator(seed: int, shuffled: Sequence[int] = (), draws: Sequence[tuple[int, int]] = ()) -> random.Random:
    """The official scripts' module-level generator as it stands before their next draw.

    They call ``random.seed(seed)``, shuffle their data (one ``random.shuffle`` per list, of
    `shuffled` items each), then draw error samples with ``random.sample`` (``draws``: the
    population and pick counts so far). How far each of those moves the generator depends
    only on those sizes, so replaying them on ``range``s gives the very generator.

    Examples:
        >>> official_generator(3, (8,), ((5, 2),)).random() == _replayed(3, 8, 5, 2)
        True
    """
    rng = random.Random(seed)
    for n in shuffled:
        rng.shuffle(list(range(n)))
    for population, picks in draws:
        rng.sample(range(population), picks)
    return rng


def _replayed(seed: int, shuffled: int, population: int, picks: int) -> float:
    """The doctest's reference: the module-level way, on a private generator."""
    rng = random.Random(seed)
    data = list(range(shuffled))
    rng.shuffle(data)
    rng.sample(list(range(population)), picks)
    return rng.random()


def select_error_samples(
    k: int = 2,
    *,
    seed: int = 0,
    fallback: bool = True,
    draw: str = "per-iteration",
    shuffled: Sequence[int] = (),
) -> Transform:
    """Choose up to `k` wrong samples (score below 1).

    Args:
        k: How many samples at most.
        seed: The selection seed; the same seed gives the same choice.
        fallback: With no wrong sample, choose `k` random samples instead
            (False: choose none, and the later stages make no backward or rewrite call;
            the paper's code has no fallback).
        draw: ``"official"``: the paper's scripts' draw, ``random.sample`` of the wrong
            samples in training order from one generator seeded once with `seed`, after
            shuffles of `shuffled` items each (the split's), every draw moving it on; the
            picks keep the order drawn. ``"per-iteration"``: a generator seeded afresh from
            `seed` and the iteration, the picks sorted (independent of earlier iterations, so
            one iteration's choice never depends on how many wrong samples another had).
        shuffled: For the official draw, the sizes of the lists the official script shuffled
            before its first draw (BBH: the task file twice; GSM8K: the train file, then the
            test file; LIAR: the filtered train file once).
    """
    if not (type(k) is int and k >= 1):  # a float k failed inside the first update, after the forward calls
        raise ValueError(f"select_error_samples needs a whole number k >= 1, got {k!r}")
    if draw not in DRAWS:
        raise ValueError(f"select_error_samples: unknown draw {draw!r}; choose one of: {', '.join(DRAWS)}")
    shuffles = tuple(shuffled)
    if any(not (type(n) is int and n >= 0) for n in shuffles):
        raise ValueError(f"select_error_samples: shuffled needs whole numbers of items, got {shuffled!r}")

    def update(step: Step, state: SelectState, params: Params) -> Program[tuple[Step, SelectState]]:
        scores = require(step, "scores", "select_error_samples", "fit (which scores the training batch)")
        wrong = [i for i, s in enumerate(scores) if not s.correct]
        new_state = state
        if draw == "official":
            rng = official_generator(state.seed, shuffles, state.draws)
            population = wrong if wrong or not fallback else list(range(len(scores)))
            picks = min(k, len(population))
            chosen = rng.sample(population, picks)
            new_state = attrs.evolve(state, draws=(*state.draws, (len(population), picks)))
        else:
            rng = _rng(state.seed, step.iteration, "select")
            if wrong:
                chosen = sorted(rng.sample(wrong, min(k, len(wrong))))
            elif fallback:
                chosen = sorted(rng.sample(range(len(scores)), min(k, len(scores))))
            else:
                chosen = []
        if wrong:
            note = f"{len(wrong)} wrong"
        else:
            note = "no wrong sample; random fallback" if fallback else "no wrong sample"
        ids = ", ".join(str(step.traces[i].sample) for i in chosen)
        new = attrs.evolve(step, selected=tuple(chosen)).noted(
            "select_error_samples", note, f"selected: {ids or 'none'}"
        )
        return pure((new, new_state))

    return Transform(lambda params: SelectState(seed), update, "select_error_samples")


def _check_max_chars(stage: str, max_chars: int | None) -> None:
    """Refuse a bound below one character, as `rules.concat` does: it would keep nothing, unsaid."""
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"{stage}: max_chars must be positive, got {max_chars}")


@attrs.frozen
class BackwardState:
    """The replies of earlier backward calls, by request key (see `backward`'s `reuse`)."""

    replies: FrozenMap[str, str] = FrozenMap()


def _request_key(request: LLMRequest) -> str:
    """A digest of everything a request says (`request_key`: what a cache keys it by)."""
    return hashlib.sha256(request_key(request).encode("utf-8", "surrogatepass")).hexdigest()


class _Reusing(Program[tuple[Any, tuple[tuple[str, str], ...]]]):
    """`inner` with each request whose key `known` holds answered from it and never emitted.

    Its value is ``(inner's value, the (key, text) of every successful reply it was fed)``.
    """

    __slots__ = ("emitted", "inner", "known", "made", "waiting")

    def __init__(
        self,
        inner: Program[Any],
        known: Mapping[str, str],
        made: tuple[tuple[str, str], ...],
        waiting: Mapping[Any, LLMRequest],
        emitted: tuple[tuple[Any, LLMRequest], ...],
    ) -> None:
        self.inner, self.known, self.made, self.waiting = inner, known, made, waiting
        self.emitted = emitted  # type: ignore[misc]

    def feed(self, token: Any, reply: Any) -> Program[tuple[Any, tuple[tuple[str, str], ...]]]:
        request = self.waiting.get(token)
        if request is None:
            raise ProtocolError(f"unknown token {token!r} for a backward step reusing replies")
        made = self.made
        if isinstance(reply, Success):
            made = (*made, (_request_key(request), reply.unwrap().text))
        waiting = {t: r for t, r in self.waiting.items() if t != token}
        return _settle(self.inner.feed(token, reply), self.known, made, waiting)


def _settle(
    inner: Program[Any],
    known: Mapping[str, str],
    made: tuple[tuple[str, str], ...],
    waiting: dict[Any, LLMRequest],
) -> Program[tuple[Any, tuple[tuple[str, str], ...]]]:
    """Answer what `inner` just emitted from `known` until it asks for something new, or is done."""
    pending = list(inner.emitted)
    out = []
    while pending:
        token, request = pending.pop(0)
        text = known.get(_request_key(request))
        if text is None:
            out.append((token, request))
            waiting[token] = request
            continue
        inner = inner.feed(token, Success(LLMResponse(text)))
        pending.extend(inner.emitted)
    if inner.done:
        return pure((inner.value, made))
    return _Reusing(inner, known, made, waiting, tuple(out))


def reusing(program: Program[T], known: Mapping[str, str]) -> Program[tuple[T, tuple[tuple[str, str], ...]]]:
    """`program` with the requests whose `_request_key` `known` holds answered from it (no call).

    Its value is ``(program's value, the (key, text) of each new successful reply)``.
    """
    return _settle(program, known, (), {})


def backpropagate(rule: Rule | None = None, *, reuse: bool = False) -> Transform:
    """Backpropagate each selected sample's feedback, all samples concurrently.

    Args:
        rule: The backward rule (default `rules.neighbor_aware()`).
        reuse: A sample drawn again whose backward questions are the very ones asked
            before (same output, inputs, instruction and feedback: its forward unchanged,
            say after a rejected candidate) keeps the feedback it got then, with no new
            call, as the paper's code does (False, the default: ask again).

    Raises:
        TypeError: When `rule` is not a backward rule (``rules.per_edge`` left uncalled, say),
            here rather than once `fit` has made its first forward calls.
    """
    if rule is not None:
        checked_rule(rule)

    def update(step: Step, state: Any, params: Params) -> Program[tuple[Step, Any]]:
        selected = require(step, "selected", "backward", "select_error_samples()")
        used = _with_options(rule if rule is not None else neighbor_aware(), step.options.get("backward"))
        # Each sample backpropagates on the graph its forward ran on, with the params it ran with (one
        # graph for all under a static graph; its own recorded graph for a system recorded per sample).
        programs = [
            backward_program(step.graph_of(i), step.params_of(i, params), step.traces[i], step.scores[i].feedback, used)
            for i in selected
        ]
        known = state.replies if reuse else FrozenMap()

        def done(pair: tuple[tuple[Gradients, ...], tuple[tuple[str, str], ...]]) -> tuple[Step, Any]:
            parts, made = pair
            grads = merge_gradients(parts)
            notes = (f"{len(grads.partials)} partials", f"{len(grads.failures)} failures")
            kept = BackwardState(FrozenMap((*state.replies.items(), *made))) if reuse else state
            return attrs.evolve(step, gradients=grads).noted("backward", *notes), kept

        return map_(reusing(gather(*programs), known), done)

    # Without reuse the state is EmptyState, as before the stage could keep replies: older checkpoints still fit.
    return Transform(lambda params: BackwardState() if reuse else EmptyState(), update, "backward")


def _with_options(rule: Rule, options: Any) -> Rule:
    """`rule` with the run's backward options under its own (and its aggregator's, if it calls an LLM)."""
    if not options:
        return rule
    changes: dict[str, Any] = {}
    if isinstance(getattr(rule, "options", None), FrozenMap):
        changes["options"] = merged_options(options, rule.options)  # type: ignore[attr-defined]
    aggregator = getattr(rule, "aggregate", None)
    if isinstance(getattr(aggregator, "options", None), FrozenMap):
        changes["aggregate"] = attrs.evolve(aggregator, options=merged_options(options, aggregator.options))
    return attrs.evolve(rule, **changes) if changes and attrs.has(type(rule)) else rule


def _examples(step: Step, name: str, params: Params, grads: Gradients | None) -> tuple[InstructionExample, ...]:
    """The examples of instruction `name`: per selected sample (in selection order), one per node of the
    sample's graph that ran with it (one for a static graph; each occurrence of a loop, in order, for a
    recorded one) and reaches its output. A sample whose graph has no such node -- a branch it did not
    take -- gives none, and a node only some samples reach is still shown the ones that did."""
    examples = []
    for i in step.selected or ():
        trace, score = step.traces[i], step.scores[i]
        graph = step.graph_of(i)
        for node in occurrences(graph, name, params):
            if graph[node].kind != "llm" or not graph.reaches_output(node):
                # A node that does not reach the output gets no examples: nothing it does changes the
                # score (with gradients it is told nothing; without them it would be rewritten blind).
                continue
            run = trace[node]
            if node == graph.output:
                feedback: Any = score.feedback
            elif grads is None:
                feedback = ""
            else:
                # A node whose step found no feedback to start from (every partial for it failed) has a
                # feedback row of None: it was told nothing, and the sample is no example of it.
                told = [f.value for f in grads.feedback_for(node) if f.sample == trace.sample and f.value is not None]
                texts = [p.text for p in grads.for_node(node) if p.sample == trace.sample]
                if not told and not texts:
                    continue
                feedback = told[0] if told else concat_texts(texts)
            examples.append(InstructionExample(trace.sample, run.inputs, run.value, feedback))
    return tuple(examples)


def _received(grads: Gradients, name: str) -> list[str]:
    """What `name` received, per sample: its gradient as the rule's aggregator made it (a graph
    node), else its partials (an instruction under per-edge with instructions: one per sample)."""
    told = [str(f.value) for f in grads.feedback_for(name) if f.value is not None]
    return told if told else [p.text for p in grads.for_node(name)]


def aggregate(
    *, examples: bool = True, require_gradients: bool = True, max_chars: int | None = None, feedback: bool = True
) -> Transform:
    """Gather, per trainable parameter, what it will be rewritten from.

    An instruction gets its node's examples (inputs, output and feedback per
    selected sample -- the paper's gradient; a sample on which the node was told
    nothing, its backward calls having failed, is left out; a node that does not
    reach the output gets none, with or without gradients); any parameter that received
    partials (a free parameter, or an instruction under per-edge with
    instructions) gets, per sample, its gradient as the backward rule's
    aggregator made it, joined in sample order; a free parameter that is
    itself the output gets the seed feedback.

    Args:
        examples: Include instruction examples (False: partials only, as TextGrad).
        require_gradients: Without a backward stage, fail (True) or build examples
            whose only feedback is the output's seed feedback (False).
        max_chars: Bound each parameter's concatenated feedback.
        feedback: False shows no feedback at all, not even the output's: examples
            are inputs and outputs only (the "no gradients" ablation, as the paper ran it).

    Raises:
        ValueError: When `max_chars` is below 1 (as `rules.concat` refuses it).
    """
    _check_max_chars("aggregate", max_chars)

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        require(step, "selected", "aggregate", "select_error_samples()")
        grads = require(step, "gradients", "aggregate", "backpropagate(...)") if require_gradients else step.gradients
        result = {}
        for name in step.trainable(params):
            param = params[name]
            found = _examples(step, name, params, grads) if examples and param.node else ()
            as_output = [i for i in step.selected or () if step.graph_of(i).output == name]
            if not feedback:
                found, texts = tuple(attrs.evolve(e, feedback=None) for e in found), []
            elif as_output:  # a free parameter that is itself the output: the seed feedback
                texts = [step.scores[i].feedback for i in as_output]
            else:
                texts = _received(grads, name) if grads is not None else []
            joined = concat_texts(texts, max_chars=max_chars)
            if found or joined:
                result[name] = ParamGradient(name, found, joined)
        note = f"gradients for {', '.join(result) or 'no parameter'}"
        return pure((attrs.evolve(step, param_gradients=FrozenMap(result)).noted("aggregate", note), state))

    return Transform(lambda params: EmptyState(), update, "aggregate")


def _example_text(gradient: ParamGradient) -> str:
    return render_examples([(e.inputs, e.output, e.feedback) for e in gradient.examples])


def critique(*, engine: str = "optimizer", options: Mapping[str, Any] | None = None) -> Transform:
    """Ask for an explicit gradient (a critique) of each instruction before rewriting it."""

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        grads = require(step, "param_gradients", "critique", "aggregate()")
        names = [n for n, g in grads.items() if g.examples]

        def one(name: str) -> Program[tuple[str, Any]]:
            p = params[name]
            request = render_critique(
                name,
                p.role,
                p.value,
                _example_text(grads[name]),
                engine=engine,
                options=merged_options(step.options.get(engine), options),
            )
            return map_(ask(request), lambda reply: (name, _tagged(reply, "critique")))

        def done(results: tuple[tuple[str, Any], ...]) -> tuple[Step, EmptyState]:
            ok = {n: r.unwrap() for n, r in results if isinstance(r, Success)}
            bad = [f"{n}: {r.failure()}" for n, r in results if not isinstance(r, Success)]
            new = attrs.evolve(step, critiques=FrozenMap(ok)).noted(
                "critique", f"critiques for {', '.join(ok) or 'none'}", *bad
            )
            return new, state

        return map_(gather(*(one(n) for n in names)), done)

    return Transform(lambda params: EmptyState(), update, "critique")


def _tagged(reply: Any, tag: str, *, first: bool = False) -> Any:
    if not isinstance(reply, Success):
        error = reply.failure()
        return Failure(f"the call failed ({error.kind}: {error.message})")
    return parse_tagged(reply.unwrap().text, [tag], first=first).alt(lambda e: e.reason)


def propose_rewrite(
    *,
    constraints: Sequence[str] = (),
    max_chars: int | None = None,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> Transform:
    """One optimizer request per parameter with a gradient: propose its improved value.

    An instruction is rewritten from its examples (or its critique, when a
    `critique()` stage ran); a free parameter from its aggregated partials.
    `constraints` (e.g. ``["Keep the output format."]``) are stated in the prompt,
    one per line; a proposal longer than `max_chars` is unusable. An unusable reply
    leaves the parameter unchanged, and the report says why.

    Raises:
        TypeError: When `constraints` is a single string (each of its characters
            would be stated as a constraint): pass a sequence of strings.
        ValueError: When `max_chars` is below 1 (every proposal would be unusable).
    """
    _check_max_chars("propose_rewrite", max_chars)
    if isinstance(constraints, str):
        raise TypeError(f"constraints: pass a sequence of strings, such as [{constraints!r}], not a single string")
    constraints = tuple(constraints)

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        grads = require(step, "param_gradients", "propose_rewrite", "aggregate()")

        def one(name: str) -> Program[Proposal]:
            p, g = params[name], grads[name]
            text = step.critiques.get(name)
            request = render_rewrite(
                name,
                p.role,
                p.value,
                examples="" if text else _example_text(g),
                feedback="" if text else g.feedback,
                critique=text or "",
                history=step.history.get(name, ()),
                constraints=constraints,
                engine=engine,
                options=merged_options(step.options.get(engine), options),
                failed=failed,
            )
            # A reply with several blocks (a draft, then the text): the first is the answer, as the paper's
            # optimizer reads it.
            return map_(ask(request), lambda reply: _proposal(name, _tagged(reply, "improved", first=True), max_chars))

        names = [n for n in grads if n in step.trainable(params)]
        failed = not step.scores or not any(step.scores[i].correct for i in step.selected or ())

        def done(proposals: tuple[Proposal, ...]) -> tuple[Step, EmptyState]:
            notes = [f"{p.param}: {'proposed' if p.ok else 'kept (' + p.reason + ')'}" for p in proposals]
            new = attrs.evolve(step, proposals=FrozenMap((p.param, p) for p in proposals)).noted(
                "propose_rewrite", *notes
            )
            return new, state

        return map_(gather(*(one(n) for n in names)), done)

    return Transform(lambda params: EmptyState(), update, "propose_rewrite")


def _proposal(name: str, parsed: Any, max_chars: int | None) -> Proposal:
    if not isinstance(parsed, Success):
        return Proposal(name, None, f"unusable reply: {parsed.failure()}")
    value = parsed.unwrap()
    if max_chars is not None and len(value) > max_chars:
        return Proposal(name, None, f"unusable reply: {len(value)} characters, over the limit of {max_chars}")
    return Proposal(name, value, "")


def _usable(step: Step, params: Params) -> list[Proposal]:
    if step.proposals is None and step.skipped:  # `every_k` or `apply_if` skipped the rewrite: nothing to update
        return []
    proposals = require(step, "proposals", "an update stage", "propose_rewrite()")
    return [
        p for p in proposals.values() if p.ok and p.value != params.value(p.param) and p.param in step.trainable(params)
    ]


def full_update() -> Transform:
    """Every usable proposal becomes an update (the paper's full update)."""

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        chosen = _usable(step, params)
        new = attrs.evolve(step, updates=FrozenMap((p.param, p.value) for p in chosen))
        return pure((new.noted("full_update", f"updating {', '.join(p.param for p in chosen) or 'nothing'}"), state))

    return Transform(lambda params: EmptyState(), update, "full_update")


def sample_update(p: float, *, seed: int = 0) -> Transform:
    """Each usable proposal becomes an update with probability `p` (seeded; at least one)."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"sample_update needs 0 < p <= 1, got {p}")

    def update(step: Step, state: SelectState, params: Params) -> Program[tuple[Step, SelectState]]:
        usable = _usable(step, params)
        rng = _rng(state.seed, step.iteration, "sample_update")
        chosen = [q for q in usable if rng.random() < p]
        if usable and not chosen:
            chosen = [rng.choice(usable)]
        new = attrs.evolve(step, updates=FrozenMap((q.param, q.value) for q in chosen))
        return pure((new.noted("sample_update", f"updating {', '.join(q.param for q in chosen) or 'nothing'}"), state))

    return Transform(lambda params: SelectState(seed), update, "sample_update")


def one_at_a_time(*, seed: int = 0) -> Transform:
    """Exactly one usable proposal, chosen at random (seeded), becomes the update."""

    def update(step: Step, state: SelectState, params: Params) -> Program[tuple[Step, SelectState]]:
        usable = _usable(step, params)
        chosen = [_rng(state.seed, step.iteration, "one_at_a_time").choice(usable)] if usable else []
        new = attrs.evolve(step, updates=FrozenMap((q.param, q.value) for q in chosen))
        return pure((new.noted("one_at_a_time", f"updating {', '.join(q.param for q in chosen) or 'nothing'}"), state))

    return Transform(lambda params: SelectState(seed), update, "one_at_a_time")


def evaluate(
    graph: Graph | SystemRef,
    params: Params,
    examples: Sequence[Example],
    loss: Loss,
    *,
    options: Any = None,
) -> Program[tuple[tuple[Trace, Score], ...]]:
    """Forward and score each example; each sample is scored the moment its trace exists.

    `options` are the forward requests' sampling options. `graph` may be a `SystemRef` (a system
    recorded per sample): each item is then one `run_system` request, answered by the effects
    layer with the item's recorded trace.

    Raises:
        TypeError: When an item of `examples` is not an `Example` (``as_examples(items)``
            makes them from dicts), or `loss` cannot be called as ``loss(example, trace)``.
    """
    check_loss(loss)
    examples = tuple(examples)
    for position, example in enumerate(examples):
        if not isinstance(example, Example):
            raise TypeError(
                f"evaluate takes Examples, got a {type(example).__name__} at {position}; "
                "as_examples(items) makes them from dicts"
            )

    def one(example: Example) -> Program[tuple[Trace, Score]]:
        if isinstance(graph, SystemRef):
            trace = run_system(graph, params, example, options=options)
        else:
            trace = forward(graph, params, example.inputs, sample=example.id, options=options)
        return bind(trace, lambda t: score(example, t))

    def score(example: Example, trace: Trace) -> Program[tuple[Trace, Score]]:
        scored = loss(example, trace)
        if not isinstance(scored, Program):  # a bare Score would fail in the runner, far from its cause
            raise TypeError(
                f"the loss must return a Program[Score], e.g. pure(Score(...)), got {type(scored).__name__}"
            )
        return map_(scored, lambda s: (trace, s))

    return gather(*(one(e) for e in examples))


def mean_score(results: Sequence[tuple[Trace, Score]]) -> float:
    """The mean score of evaluated samples (0.0 for none)."""
    return sum(s.value for _, s in results) / len(results) if results else 0.0


@attrs.frozen
class GateState:
    """The best validation score accepted so far (None until known).

    Attributes:
        best: The best score's mean.
        items: Under ``rule="lcb"`` on a validation set, the best params' score per
            validation item, in order (None until scored; the paired gains need them).
    """

    best: float | None = None
    items: tuple[float, ...] | None = None


#: The gate's acceptance rules (see `validation_gate`).
GATE_RULES = ("sum", "lcb")


def _best_so_far(
    step: Step, state: GateState, params: Params, loss: Loss, lcb: bool
) -> tuple[float | None, Program[tuple[float, ...] | None]]:
    """The gate's best score so far (None: to be taken from its items) and a program of its score per item
    (of None when the sum rule knows the best score: no call is made for it)."""
    if not step.validation:  # the official protocol: the current params' training scores come with the step
        current = require(step, "scores", "validation_gate", "fit (which scores the training batch)")
        return sum(s.value for s in current) / len(current), pure(tuple(s.value for s in current))
    best = state.best if state.best is not None else step.best_score
    known = state.items if lcb and state.items is not None and len(state.items) == len(step.validation) else None
    if known is not None or (best is not None and not lcb):
        return best, pure(known)
    scored = evaluate(step.graph, params, step.validation, loss, options=step.options.get("forward"))
    return best, map_(scored, lambda results: tuple(s.value for _, s in results))


def validation_gate(
    *, min_gain: float = 0.0, always_accept: bool = False, rule: str = "sum", alpha: float = 0.05
) -> Transform:
    """Accept the updates only if the candidate beats the best score so far.

    The candidate (params with the updates applied) is scored with ordinary
    forward calls on ``step.validation`` (the held-out protocol) or, when there
    is no validation set, on the training items (the official protocol). It is
    accepted when its score exceeds the best by more than `min_gain` (strictly).

    * On a validation set, the best so far comes from the gate's state, else
      ``step.best_score`` (which `fit` sets by scoring the initial params once),
      else the gate scores the current params too.
    * On the training items, the best so far is the mean of ``step.scores`` (the
      current params' training forward, which `fit` reuses from the previous
      iteration), and the candidate's traces and scores are kept in
      ``step.candidate_results`` for `fit` to reuse as the next iteration's forward.
    * A step whose updating stages `every_k` or `apply_if` skipped has no candidate:
      the gate makes no call and records nothing to update (rejected, unless
      `always_accept`).

    **Noise-aware acceptance** (``rule="lcb"``). The strict sum above accepts a
    candidate that won one more item by luck. Under ``"lcb"`` the gate pairs each
    item's candidate score with the best params' score on the same item, and accepts
    only when the sum rule does *and* the one-sided lower confidence bound at level
    `alpha` of the mean paired gain exceeds `min_gain` (so it is never more lenient than
    the sum rule). The bound is Student's paired t: ``mean - t(1 - alpha, n - 1) * sd /
    sqrt(n)`` over the n items' gains (`paired_lower_bound`). Why t: Hoeffding's and the
    empirical-Bernstein bounds hold for any scores in [0, 1] but are far too wide at the
    sizes validation sets have (at alpha 0.05 with 50 items, Hoeffding's margin for gains
    in [-1, 1] is 0.35: a candidate must win over a third of the items outright), while the
    paired t-test is the test practitioners read as "significantly better"; with gains
    averaged over tens of items the normal approximation behind it is close, and the
    pairing removes the items' own difficulty. With fewer than two items there is no
    bound and the candidate is refused; with every gain equal the bound is that gain.
    On a validation set the best params' per-item scores are kept in the gate's state;
    the first decision, before they are known, scores the current params on the
    validation set once (forward calls a cache answers free). The stage report gives
    the mean paired gain, the bound and the verdict.

    Args:
        min_gain: How much the candidate must beat the best score by (under ``"lcb"``,
            also what the bound must exceed).
        always_accept: Score the candidate but accept it whatever its score (the
            "no gate" ablation as the official code runs it: the candidate's forward
            still serves as the next iteration's).
        rule: ``"sum"`` (the default: the strict comparison of the mean scores) or
            ``"lcb"`` (the paired lower confidence bound, above).
        alpha: The one-sided level of the ``"lcb"`` bound, in [1e-9, 0.5] (0.5 is the
            sum rule on paired items; smaller is stricter).

    Raises:
        ValueError: When `min_gain` is NaN, `rule` is unknown or `alpha` is out of range.
    """

    if min_gain != min_gain:  # NaN: no score would ever beat the best by it
        raise ValueError("validation_gate's min_gain must be a number, got nan")
    if rule not in GATE_RULES:
        raise ValueError(f"validation_gate: unknown rule {rule!r}; choose one of: {', '.join(GATE_RULES)}")
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and MIN_ALPHA <= alpha <= 0.5):
        raise ValueError(f"validation_gate needs {MIN_ALPHA:g} <= alpha <= 0.5, got {alpha!r}")
    lcb = rule == "lcb"

    def update(step: Step, state: GateState, params: Params) -> Program[tuple[Step, GateState]]:
        skipped = step.skipped and not step.updates  # `every_k` or `apply_if` skipped the stages making a candidate
        updates = (
            step.updates
            if skipped
            else require(step, "updates", "validation_gate", "an update stage such as full_update()")
        )
        on_train = not step.validation
        if step.loss is None or (on_train and not step.train):
            raise ProtocolError("validation_gate needs step.loss and step.validation or step.train; run it under fit")
        if skipped or (not updates and not on_train):
            verdict = "accepted" if always_accept else "rejected"
            new = attrs.evolve(step, accepted=always_accept).noted("validation_gate", f"nothing to update; {verdict}")
            return pure((new, state))
        # On the training items even an unchanged candidate is scored, as the official loop does: its
        # forward is the next iteration's either way, so the counts per iteration never vary.
        examples = step.train if on_train else step.validation
        forward_options = step.options.get("forward")
        candidate = evaluate(step.graph, apply_updates(params, updates), examples, step.loss, options=forward_options)
        best, per_item = _best_so_far(step, state, params, step.loss, lcb)

        def decide(pair: tuple[Any, tuple[float, ...] | None]) -> tuple[Step, GateState]:
            results, items = pair
            score = mean_score(results)
            base = best if best is not None else sum(items or ()) / len(items or (0,))
            bound = (
                paired_lower_bound([s.value - b for (_, s), b in zip(results, items or (), strict=True)], alpha)
                if lcb
                else None
            )
            accepted = always_accept or (score > base + min_gain and (bound is None or bound.bound > min_gain))
            verdict = "accepted" if accepted else "rejected"
            new = attrs.evolve(
                step,
                candidate_score=score,
                candidate_results=tuple(results) if on_train else None,
                accepted=accepted,
                best_score=score if accepted else base,
            )
            where = "training items" if on_train else "validation"
            said = f"candidate {score:.3f} vs best {base:.3f} on {where}"
            if bound is not None:
                said += f"; rule lcb: {bound.describe()}"
            new = new.noted("validation_gate", f"{said}: {verdict}")
            kept = tuple(s.value for _, s in results) if accepted else items
            return new, GateState(score if accepted else base, kept if lcb and not on_train else None)

        return map_(gather(candidate, per_item), decide)

    return Transform(lambda params: GateState(), update, "validation_gate")


@attrs.frozen
class MomentumState:
    """Past feedback per parameter (most recent last), at most `history` entries each."""

    past: FrozenMap[str, tuple[str, ...]] = FrozenMap()


def momentum(*, history: int = 2) -> Transform:
    """Show the rewrite earlier feedback and rejected attempts (put it before `propose_rewrite`)."""
    if history < 1:
        raise ValueError(f"momentum needs history >= 1, got {history}")

    def update(step: Step, state: MomentumState, params: Params) -> Program[tuple[Step, MomentumState]]:
        grads = require(step, "param_gradients", "momentum", "aggregate()")
        shown = {}
        past = dict(state.past)
        for name, gradient in grads.items():
            rejected = tuple(f"rejected attempt: {v}" for v in step.previous_rejected.get(name, ())[-history:])
            shown[name] = past.get(name, ()) + rejected
            summary = gradient.feedback or "; ".join(str(e.feedback) for e in gradient.examples if e.feedback)
            if summary:
                past[name] = (past.get(name, ()) + (f"iteration {step.iteration}: {summary}",))[-history:]
        new = attrs.evolve(step, history=FrozenMap(shown)).noted(
            "momentum", f"history for {', '.join(n for n, h in shown.items() if h) or 'none'}"
        )
        return pure((new, MomentumState(FrozenMap(past))))

    return Transform(lambda params: MomentumState(), update, "momentum")


@attrs.frozen
class SwitchState:
    """Whether a candidate has been accepted yet, and the running transform's state."""

    accepted: bool
    inner: Any


def after_first_accept(before: Transform, after: Transform) -> Transform:
    """`before` until the first iteration whose candidate is accepted, `after` from the next one on.

    Both must keep their state in the same shape (two chains that differ only in a stage's
    settings, such as the backward rule): the state carries over at the switch.
    """

    def update(step: Step, state: SwitchState, params: Params) -> Program[tuple[Step, SwitchState]]:
        running = after if state.accepted else before

        def done(pair: tuple[Step, Any]) -> tuple[Step, SwitchState]:
            new, inner = pair
            return new, SwitchState(state.accepted or new.accepted is True, inner)

        return map_(running.update(step, state.inner, params), done)

    return Transform(lambda params: SwitchState(False, before.init(params)), update, before.name)


#: The values of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (SelectState, BackwardState, GateState, MomentumState, SwitchState)
