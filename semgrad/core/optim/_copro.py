"""DSPy's COPRO as a transform: candidate instructions per parameter, scored, refined from the best.

What `dspy.teleprompt.COPRO.compile` does, per round of `depth`:

* round 1: for every predictor, one call (``n = breadth - 1`` completions) proposes
  instructions from the current one alone; the current one is a candidate too;
* every round: predictor by predictor, every candidate is scored by running the
  whole program on the training set with that instruction (the predictors handled
  before it already set to their best); the predictor then takes its best one.
  With several predictors, all candidates so far are scored again (the others changed);
* rounds after the first: for every predictor, one call (``n = breadth``) proposes new
  instructions from the best ``breadth`` attempts so far, shown with their scores in
  increasing order.

`copro()` makes the same calls: each `fit` iteration is one round (run `fit` with
``iterations=depth``; later iterations change nothing). A generation call is one
request whose ``targets`` name the candidates it must return; scoring is ordinary
forward calls on ``step.train``. DSPy's output-field prefix has no counterpart in a
semgrad graph, so only instructions are proposed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from returns.result import Success

from .._frozen import FrozenMap
from .._graph import Params
from .._program import Program, ask, bind, gather, map_, pure
from .._requests import LLMRequest, Message
from .._sampling import merged_options
from ._base import Proposal, Step, Transform
from ._named import named_form, parse_named
from ._stages import evaluate, mean_score

__all__ = ["COPRO_ATTEMPTS_USER", "COPRO_BASIC_USER", "COPRO_SYSTEM", "CoproState", "copro", "render_copro"]

COPRO_SYSTEM = (
    "You optimize the instructions given to large language models. You propose instructions that lead a "
    "good language model to carry out its task well. Do not be afraid to be creative."
)
COPRO_BASIC_USER = """Here is the instruction of a step of a program, before optimization:
<current>
{current}
</current>

Propose {n} different improved instructions for it. Reply with one block per instruction, exactly in this form:
{form}"""
COPRO_ATTEMPTS_USER = """Here are instructions tried for a step of a program, each with the score it reached; \
they are in increasing order of score, and a higher score is better:
{attempts}

Propose {n} new instructions that will lead a good language model to do the task even better. \
Reply with one block per instruction, exactly in this form:
{form}"""


@attrs.frozen
class CoproState:
    """COPRO's search so far.

    Attributes:
        round: Rounds done.
        candidates: Every candidate proposed so far, per parameter (DSPy's ``all_candidates``).
        latest: The candidates of the last round, per parameter.
        evaluated: ``(instruction, score)`` per distinct candidate, per parameter, first-scored first.
        current: The best instruction per parameter (the program being compiled).
    """

    round: int = 0
    candidates: FrozenMap[str, tuple[str, ...]] = FrozenMap()
    latest: FrozenMap[str, tuple[str, ...]] = FrozenMap()
    evaluated: FrozenMap[str, tuple[tuple[str, float], ...]] = FrozenMap()
    current: FrozenMap[str, str] = FrozenMap()


def _labels(n: int) -> tuple[str, ...]:
    return tuple(f"candidate {i}" for i in range(1, n + 1))


def render_copro(
    name: str,
    n: int,
    *,
    current: str | None = None,
    attempts: Sequence[tuple[str, float]] = (),
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """A COPRO generation request for `n` candidates of parameter `name`.

    With `current`, the first round's request (the instruction alone); otherwise
    the `attempts` ``(instruction, score)``, shown in increasing order of score.
    """
    labels = _labels(n)
    form = named_form("improved", labels, "an instruction")
    if current is not None:
        user = COPRO_BASIC_USER.format(current=current, n=n, form=form)
    else:
        shown = "\n".join(
            f"<attempt {i}>\nInstruction: {text}\nScore: {score:g}\n</attempt {i}>"
            for i, (text, score) in enumerate(attempts, 1)
        )
        user = COPRO_ATTEMPTS_USER.format(attempts=shown, n=n, form=form)
    return LLMRequest(
        (Message("system", COPRO_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        node=name,
        targets=labels,
        options=options or {},
    )


def _read_candidates(reply: Any, labels: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(reply, Success):
        return ()
    parsed = parse_named(reply.unwrap().text, "improved", labels)
    if not isinstance(parsed, Success):
        return ()
    return tuple(v.strip().strip('"').strip() for v in parsed.unwrap().values())


def _best_attempts(evaluated: tuple[tuple[str, float], ...], breadth: int) -> tuple[tuple[str, float], ...]:
    ranked = sorted(evaluated, key=lambda pair: pair[1], reverse=True)[: min(len(evaluated), breadth)]
    return tuple(reversed(ranked))


def copro(
    breadth: int = 10,
    depth: int | None = 3,
    *,
    init_temperature: float = 1.4,
    engine: str = "optimizer",
) -> Transform:
    """DSPy's COPRO: per parameter, propose `breadth` candidate instructions, score each on
    the training set, and refine from the best ones, one round per `fit` iteration for `depth` rounds
    (None: one round per iteration, as many as `fit` runs).

    Args:
        breadth: Candidates per parameter and round (the first round: breadth - 1 new
            ones plus the current instruction), as in DSPy; at least 2.
        depth: Rounds; later iterations change nothing. None: no limit, so that a run's iterations
            decide, and a resumed run given more of them goes on as one started with that many.
        init_temperature: Sampling temperature of the generation calls.
        engine: The logical engine of the generation calls.

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
        loss = step.loss
        if loss is None or not step.train:
            raise ValueError("copro needs step.train and step.loss (fit sets them)")
        names = step.trainable(params)
        current = {n: state.current.get(n, params.value(n)) for n in names}
        asking = merged_options(step.options.get(engine), options)
        forward_options = step.options.get("forward")

        def generate(name: str) -> Program[tuple[str, tuple[str, ...]]]:
            if state.round == 0:
                request = render_copro(name, breadth - 1, current=str(current[name]), engine=engine, options=asking)
            else:
                attempts = _best_attempts(state.evaluated.get(name, ()), breadth)
                request = render_copro(name, breadth, attempts=attempts, engine=engine, options=asking)
            return map_(ask(request), lambda reply: (name, _read_candidates(reply, request.targets)))

        def scored(generated: tuple[tuple[str, tuple[str, ...]], ...]) -> Program[tuple[Step, CoproState]]:
            latest = {}
            candidates = {}
            for name, found in generated:
                if state.round == 0:
                    latest[name] = found + (str(current[name]),)
                    candidates[name] = latest[name]
                else:
                    latest[name] = found
                    candidates[name] = state.candidates.get(name, ()) + found
            evaluated = {n: dict(state.evaluated.get(n, ())) for n in names}
            notes = [f"{n}: {len(latest[n])} candidates this round" for n in names]

            def go(i: int, chosen: dict[str, Any]) -> Program[tuple[Step, CoproState]]:
                if i == len(names):
                    return pure(finish(chosen))
                name = names[i]
                pool = candidates[name] if len(names) > 1 else latest[name]

                def score(candidate: str) -> Program[float]:
                    trial = params.with_values({**chosen, name: candidate})
                    return map_(evaluate(step.graph, trial, step.train, loss, options=forward_options), mean_score)

                def take(scores: tuple[float, ...]) -> Program[tuple[Step, CoproState]]:
                    table = evaluated[name]
                    for candidate, value in zip(pool, scores):
                        if candidate not in table or table[candidate] < value:
                            table[candidate] = value
                    best = max(table.items(), key=lambda pair: pair[1])[0] if table else chosen[name]
                    notes.append(f"{name}: best of {len(table)} scores {table.get(best, 0.0):.3f}")
                    return go(i + 1, {**chosen, name: best})

                return bind(gather(*(score(c) for c in pool)), take)

            def finish(chosen: dict[str, Any]) -> tuple[Step, CoproState]:
                changed = {n: v for n, v in chosen.items() if v != params.value(n)}
                new_state = CoproState(
                    state.round + 1,
                    FrozenMap(candidates),
                    FrozenMap(latest),
                    FrozenMap((n, tuple(evaluated[n].items())) for n in names),
                    FrozenMap(chosen),
                )
                new = attrs.evolve(
                    step,
                    proposals=FrozenMap((n, Proposal(n, v)) for n, v in changed.items()),
                    updates=FrozenMap(changed),
                ).noted("copro", f"round {state.round + 1}" + (f" of {depth}" if depth else ""), *notes)
                return new, new_state

            return go(0, dict(current))

        return bind(gather(*(generate(n) for n in names)), scored)

    settings = f"breadth={breadth}" + (f", depth={depth}" if depth is not None else "")
    return Transform(lambda params: CoproState(), update, f"copro({settings})")


#: The run-state types of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (CoproState,)
