"""DSPy's COPRO as a transform: candidate instructions per parameter, scored, refined from the best.

What `dspy.teleprompt.COPRO.compile` does, per round of `depth`:

* round 1: for every predictor, ``breadth - 1`` proposals of an instruction from the
  current one alone, drawn as that many independent completions at ``init_temperature``
  (1.4); the current one is a candidate too;
* every round: predictor by predictor, every candidate is scored by running the
  whole program on the training set with that instruction (the predictors handled
  before it already set to their best); the predictor then takes its best one (the
  first scored among equals). With several predictors, all candidates so far are
  scored again (the others changed), and a candidate's record (its score and the
  program it was scored in) is replaced only by a higher score;
* rounds after the first: for every predictor, ``breadth`` new proposals from the best
  ``breadth`` attempts so far, shown with their scores in increasing order.

`compile` returns the program of the single best evaluation (the first recorded, predictor
by predictor, among equal scores), not each predictor's best combined: when one candidate
makes every answer right, the other instructions stay as they were in that evaluation.

`copro()` makes the same calls: each `fit` iteration is one round (run `fit` with
``iterations=depth``; later iterations change nothing), and its update is the program
`compile` would return after that round. A proposal is one request (``draw`` 0, 1, ...
tells the independent completions apart, so a cache keeps them apart too); scoring is
ordinary forward calls on ``step.train``. DSPy's output-field prefix has no counterpart in
a semgrad graph, so only instructions are proposed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from returns.result import Success

from .._frozen import FrozenMap
from .._graph import Params
from .._parse import parse_tagged
from .._program import Program, ask, bind, gather, map_, pure
from .._requests import LLMRequest, Message
from .._sampling import merged_options
from ._base import Proposal, Step, Transform
from ._stages import evaluate, mean_score

__all__ = ["COPRO_ATTEMPTS_USER", "COPRO_BASIC_USER", "COPRO_SYSTEM", "CoproState", "copro", "render_copro"]

COPRO_SYSTEM = (
    "You optimize the instructions given to large language models. You propose an instruction that leads a "
    "good language model to carry out its task well. Do not be afraid to be creative."
)
COPRO_BASIC_USER = """Here is the instruction of a step of a program, before optimization:
<current>
{current}
</current>

Propose an improved instruction for it. Reply with the instruction inside tags, exactly in this form:
<improved>
the instruction
</improved>"""
COPRO_ATTEMPTS_USER = """Here are instructions tried for a step of a program, each with the score it reached; \
they are in increasing order of score, and a higher score is better:
{attempts}

Propose a new instruction that will lead a good language model to do the task even better. \
Reply with the instruction inside tags, exactly in this form:
<improved>
the instruction
</improved>"""


@attrs.frozen
class CoproState:
    """COPRO's search so far.

    Attributes:
        round: Rounds done.
        candidates: Every candidate proposed so far, per parameter (DSPy's ``all_candidates``).
        latest: The candidates of the last round, per parameter.
        evaluated: ``(instruction, score)`` per distinct candidate, per parameter, first-scored first.
        current: The best instruction per parameter (the program the search goes on from).
        programs: Per parameter and candidate, the values of every parameter in the evaluation
            its score comes from (DSPy keeps that program with the score).
    """

    round: int = 0
    candidates: FrozenMap[str, tuple[str, ...]] = FrozenMap()
    latest: FrozenMap[str, tuple[str, ...]] = FrozenMap()
    evaluated: FrozenMap[str, tuple[tuple[str, float], ...]] = FrozenMap()
    current: FrozenMap[str, str] = FrozenMap()
    programs: FrozenMap[str, FrozenMap[str, FrozenMap[str, str]]] = FrozenMap()


def render_copro(
    name: str,
    *,
    current: str | None = None,
    attempts: Sequence[tuple[str, float]] = (),
    draw: int = 0,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """One COPRO proposal request for parameter `name` (one completion; `draw` tells repeats apart).

    With `current`, the first round's request (the instruction alone); otherwise
    the `attempts` ``(instruction, score)``, shown in increasing order of score.

    Examples:
        >>> request = render_copro("answer.instruction", current="Solve it.", draw=2, options={"temperature": 1.4})
        >>> request.purpose, request.node, request.draw, dict(request.options), request.targets
        ('rewrite', 'answer.instruction', 2, {'temperature': 1.4}, ())
    """
    if current is not None:
        user = COPRO_BASIC_USER.format(current=current)
    else:
        shown = "\n".join(
            f"<attempt {i}>\nInstruction: {text}\nScore: {score:g}\n</attempt {i}>"
            for i, (text, score) in enumerate(attempts, 1)
        )
        user = COPRO_ATTEMPTS_USER.format(attempts=shown)
    return LLMRequest(
        (Message("system", COPRO_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        node=name,
        draw=draw,
        options=options or {},
    )


def _read_candidate(reply: Any) -> tuple[str, ...]:
    if not isinstance(reply, Success):
        return ()
    parsed = parse_tagged(reply.unwrap().text, ["improved"])
    if not isinstance(parsed, Success):
        return ()
    text = parsed.unwrap().strip().strip('"').strip()
    return (text,) if text else ()


def _best_attempts(evaluated: tuple[tuple[str, float], ...], breadth: int) -> tuple[tuple[str, float], ...]:
    ranked = sorted(evaluated, key=lambda pair: pair[1], reverse=True)[: min(len(evaluated), breadth)]
    return tuple(reversed(ranked))


def best_evaluation(
    names: Sequence[str],
    evaluated: Mapping[str, Sequence[tuple[str, float]]],
    programs: Mapping[str, Mapping[str, Mapping[str, str]]],
) -> Mapping[str, str] | None:
    """The program of the single best evaluation: the highest score, the first parameter's and
    first-recorded candidate's among equals (DSPy's stable sort of every record), or None.

    Examples:
        >>> evaluated = {"a": (("x", 1.0), ("y", 0.5)), "b": (("z", 1.0),)}
        >>> programs = {"a": {"x": {"a": "x", "b": "b0"}, "y": {}}, "b": {"z": {"a": "x", "b": "z"}}}
        >>> best_evaluation(["a", "b"], evaluated, programs)
        {'a': 'x', 'b': 'b0'}
    """
    best: tuple[float, str, str] | None = None
    for name in names:
        for candidate, score in evaluated.get(name, ()):
            if best is None or score > best[0]:
                best = (score, name, candidate)
    if best is None:
        return None
    return programs.get(best[1], {}).get(best[2])


def copro(
    breadth: int = 10,
    depth: int | None = 3,
    *,
    init_temperature: float = 1.4,
    engine: str = "optimizer",
) -> Transform:
    """DSPy's COPRO: per parameter, propose `breadth` candidate instructions, score each on
    the training set, and refine from the best ones, one round per `fit` iteration for `depth` rounds
    (None: one round per iteration, as many as `fit` runs); each update is the program of the
    single best evaluation so far, as DSPy's ``compile`` returns.

    Args:
        breadth: Candidates per parameter and round (the first round: breadth - 1 new
            ones plus the current instruction), as in DSPy; at least 2. Each new one is
            its own request (an independent completion), told apart by its ``draw``.
        depth: Rounds; later iterations change nothing. None: no limit, so that a run's iterations
            decide, and a resumed run given more of them goes on as one started with that many.
        init_temperature: Sampling temperature of the proposal calls (DSPy's 1.4).
        engine: The logical engine of the proposal calls.

    Examples:
        >>> copro(breadth=4, depth=2).name
        'copro(breadth=4, depth=2)'
        >>> copro(breadth=4, depth=None).name
        'copro(breadth=4)'
    """
    if not (type(breadth) is int and breadth > 1):
        raise ValueError(f"copro needs a whole number breadth > 1, got {breadth!r}")
    if not (depth is None or (type(depth) is int and depth >= 1)):
        raise ValueError(f"copro needs a whole number depth >= 1, got {depth!r}")
    options = FrozenMap({"temperature": init_temperature})

    def update(step: Step, state: CoproState, params: Params) -> Program[tuple[Step, CoproState]]:
        if depth is not None and state.round >= depth:
            new = attrs.evolve(step, proposals=FrozenMap(), updates=FrozenMap())
            return pure((new.noted("copro", f"finished: all {depth} rounds done"), state))
        if step.loss is None or not step.train:
            raise ValueError("copro needs step.train and step.loss (fit sets them)")
        names = step.trainable(params)
        current = {n: state.current.get(n, params.value(n)) for n in names}
        asking = merged_options(step.options.get(engine), options)
        generating = (_generate(n, state, str(current[n]), breadth, engine, asking) for n in names)

        def scored(generated: tuple[tuple[str, tuple[str, ...]], ...]) -> Program[tuple[Step, CoproState]]:
            this_round = _Round.of(generated, state, current, names)
            chosen = this_round.choose(step, params, 0, dict(current))
            return map_(chosen, lambda best: this_round.finish(step, state, params, best, depth))

        return bind(gather(*generating), scored)

    settings = f"breadth={breadth}" + (f", depth={depth}" if depth is not None else "")
    return Transform(lambda params: CoproState(), update, f"copro({settings})")


def _generate(
    name: str, state: CoproState, current: str, breadth: int, engine: str, asking: Any
) -> Program[tuple[str, tuple[str, ...]]]:
    """One round's new candidates for `name`: breadth - 1 rewrites of the current instruction in the first
    round, then `breadth` from the best attempts so far (each request its own completion, told by its draw)."""
    if state.round == 0:
        requests = [
            render_copro(name, current=current, draw=d, engine=engine, options=asking) for d in range(breadth - 1)
        ]
    else:
        attempts = _best_attempts(state.evaluated.get(name, ()), breadth)
        requests = [
            render_copro(name, attempts=attempts, draw=d, engine=engine, options=asking) for d in range(breadth)
        ]
    return map_(
        gather(*(map_(ask(r), _read_candidate) for r in requests)),
        lambda found: (name, tuple(c for one in found for c in one)),
    )


@attrs.define
class _Round:
    """One COPRO round being scored: this round's candidates, every candidate so far, and the scores and
    programs evaluated, per parameter (mutable while the round's programs run, frozen into its state)."""

    names: tuple[str, ...]
    latest: dict[str, tuple[str, ...]]
    candidates: dict[str, tuple[str, ...]]
    evaluated: dict[str, dict[str, float]]
    programs: dict[str, dict[str, FrozenMap[str, Any]]]
    notes: list[str]

    @classmethod
    def of(
        cls,
        generated: tuple[tuple[str, tuple[str, ...]], ...],
        state: CoproState,
        current: dict[str, Any],
        names: tuple[str, ...],
    ) -> _Round:
        """The round that scores `generated` (the first round keeps the current instruction as a candidate)."""
        latest, candidates = {}, {}
        for name, found in generated:
            latest[name] = found + (str(current[name]),) if state.round == 0 else found
            candidates[name] = latest[name] if state.round == 0 else state.candidates.get(name, ()) + found
        return cls(
            names,
            latest,
            candidates,
            {n: dict(state.evaluated.get(n, ())) for n in names},
            {n: dict(state.programs.get(n, FrozenMap())) for n in names},
            [f"{n}: {len(latest[n])} candidates this round" for n in names],
        )

    def choose(self, step: Step, params: Params, i: int, chosen: dict[str, Any]) -> Program[dict[str, Any]]:
        """Score parameter `i`'s pool with the best of the earlier ones in place, keep its best, go on."""
        if i == len(self.names):
            return pure(chosen)
        name = self.names[i]
        pool = self.candidates[name] if len(self.names) > 1 else self.latest[name]
        loss, forward_options = step.loss, step.options.get("forward")
        assert loss is not None  # update checked it

        def score(candidate: str) -> Program[float]:
            trial = params.with_values({**chosen, name: candidate})
            return map_(evaluate(step.graph, trial, step.train, loss, options=forward_options), mean_score)

        def take(scores: tuple[float, ...]) -> Program[dict[str, Any]]:
            table = self.evaluated[name]
            for candidate, value in zip(pool, scores):
                if candidate not in table or table[candidate] < value:
                    table[candidate] = value
                    self.programs[name][candidate] = FrozenMap({**chosen, name: candidate})
            best = max(table.items(), key=lambda pair: pair[1])[0] if table else chosen[name]
            self.notes.append(f"{name}: best of {len(table)} scores {table.get(best, 0.0):.3f}")
            return self.choose(step, params, i + 1, {**chosen, name: best})

        return bind(gather(*(score(c) for c in pool)), take)

    def finish(
        self, step: Step, state: CoproState, params: Params, chosen: dict[str, Any], depth: int | None
    ) -> tuple[Step, CoproState]:
        """The step proposing the single best evaluation's program, and the state after this round."""
        names = self.names
        records = {n: tuple(self.evaluated[n].items()) for n in names}
        program = best_evaluation(names, records, self.programs) or chosen
        changed = {n: v for n, v in program.items() if n in names and v != params.value(n)}
        new_state = CoproState(
            state.round + 1,
            FrozenMap(self.candidates),
            FrozenMap(self.latest),
            FrozenMap(records),
            FrozenMap(chosen),
            FrozenMap((n, FrozenMap(self.programs[n])) for n in names),
        )
        new = attrs.evolve(
            step,
            proposals=FrozenMap((n, Proposal(n, v)) for n, v in changed.items()),
            updates=FrozenMap(changed),
        ).noted("copro", f"round {state.round + 1}" + (f" of {depth}" if depth else ""), *self.notes)
        return new, new_state


#: The run-state types of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (CoproState,)
