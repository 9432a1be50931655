"""A hypothesis state machine drives backward with replies in random order and injected failures."""

from __future__ import annotations

import hashlib

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from returns.result import Failure, Success

from semgrad.backends.fake import HashLLM
from semgrad.core import LLMError, LLMResponse, backward, forward, request_key
from semgrad.core.programs import plan_backward
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for

from ._helpers import expected_steps

FEEDBACK = "The answer should be shorter."


class Outcomes:
    """Decides, per request, whether its reply succeeds, fails, or is unreadable (deterministically)."""

    def __init__(self, seed: int):
        self.seed, self.llm = seed, HashLLM()

    def reply(self, request):
        roll = int(hashlib.sha256(f"{self.seed}:{request_key(request)}".encode()).hexdigest()[:4], 16) % 10
        if roll == 0:
            return Failure(LLMError("server", "injected", True))
        if roll == 1:
            return Success(LLMResponse("no idea, sorry"))
        return Success(LLMResponse(self.llm(request)))

    def __call__(self, request):
        reply = self.reply(request)
        return reply.unwrap() if isinstance(reply, Success) else reply.failure()


class BackwardInRandomOrder(RuleBasedStateMachine):
    """Deliver pending replies one at a time, in an order hypothesis picks."""

    @initialize(gp=graphs(), data=st.data(), seed=st.integers(0, 1000))
    def start(self, gp, data, seed):
        self.graph, self.params = gp
        self.outcomes = Outcomes(seed)
        self.trace = run_sync(forward(self.graph, self.params, data.draw(inputs_for(self.graph))), HashLLM())
        self.state = backward(self.graph, self.params, self.trace, FEEDBACK)
        self.pending = list(self.state.emitted)
        self.answered: dict[str, int] = {}
        self.first_asks: list[str] = []
        self.steps = expected_steps(self.graph, self.params)
        self._check_emitted(self.pending)

    def _done_step(self, node: str) -> bool:
        """A successor's step is over when none of its requests is pending and it either got a reply or
        never needed to ask (a function node, or a node starved of feedback) after its own successors."""
        if any(r.node == node for _, r in self.pending):
            return False
        if self.answered.get(node, 0) > 0:
            return True
        return all(self._done_step(s) for s in self.graph.successors(node) if s in self.steps)

    def _check_emitted(self, emitted):
        for _, request in emitted:
            is_repair = any(m.role == "assistant" for m in request.messages)
            if not is_repair:
                assert request.node not in self.first_asks, f"{request.node} asked twice"
                self.first_asks.append(request.node)
            for succ in self.graph.successors(request.node):
                if succ in self.steps:
                    assert self._done_step(succ) or succ == request.node, f"{request.node} before {succ}"

    @precondition(lambda self: hasattr(self, "state") and not self.state.done)
    @rule(data=st.data())
    def deliver_one(self, data):
        index = data.draw(st.integers(0, len(self.pending) - 1))
        token, request = self.pending.pop(index)
        self.answered[request.node] = self.answered.get(request.node, 0) + 1
        self.state = self.state.feed(token, self.outcomes.reply(request))
        self._check_emitted(self.state.emitted)
        self.pending.extend(self.state.emitted)

    @precondition(lambda self: hasattr(self, "state") and self.state.done)
    @rule()
    def finished(self):
        assert self.pending == []

    @invariant()
    def accounted_once_done(self):
        if not hasattr(self, "state") or not self.state.done:
            return
        grads = self.state.value
        assert grads == run_sync(backward(self.graph, self.params, self.trace, FEEDBACK), self.outcomes)
        plan = plan_backward(self.graph, self.params)
        records = [(p.target, p.source) for p in grads.partials]
        records += [(t, f.source) for f in grads.failures for t in f.targets]
        expected = [(t, s) for s in plan.steps for t in plan.targets[s]]
        assert sorted(records) == sorted(expected)
        assert set(plan.steps) == self.steps


TestBackwardInRandomOrder = BackwardInRandomOrder.TestCase
