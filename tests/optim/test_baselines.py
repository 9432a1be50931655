"""The baselines as chains: TextGrad's call pattern, OptoPrime's one call, COPRO's rounds."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM, ScriptedLLM, reply_forward, reply_rewrite
from semgrad.core import Example, FrozenMap, backward, forward, optim, rules
from semgrad.core.optim import Step
from semgrad.core.optim._named_blocks import format_named, parse_named
from semgrad.core.programs import plan_backward
from semgrad.core.scoring import exact_match
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for, pure_llms
from semgrad.topologies import paper_graph

names = st.lists(st.from_regex(r"[a-z][a-z0-9_.]{0,8}", fullmatch=True), min_size=1, max_size=5, unique=True)
texts = st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), min_size=1).filter(str.strip)


def scored_step(graph, params, llm, n):
    """A step over `n` samples whose targets never match (every sample is an error)."""
    examples = [Example({"question": f"What is {i} + {i}?"}, "never matches", id=i) for i in range(n)]
    results = run_sync(optim.evaluate(graph, params, examples, exact_match()), llm)
    return Step(graph, 0, tuple(examples), tuple(t for t, _ in results), tuple(s for _, s in results),
                loss=exact_match())  # fmt: skip


def observe(transform, step, params, llm, state=None):
    """Run one update: (new step, new state, requests by purpose)."""
    rec = RecordingLLM(llm)
    new, new_state = run_sync(transform.update(step, transform.init(params) if state is None else state, params), rec)
    return new, new_state, dict(rec.counts())


@given(names, st.lists(texts, min_size=5, max_size=5))
def test_named_blocks_round_trip(keys, values):
    """`parse_named` reads back exactly what `format_named` wrote, in the order asked."""
    written = dict(zip(keys, (v.strip() for v in values)))
    assert dict(parse_named(format_named("improved", written), "improved", list(reversed(keys))).unwrap()) == written


@given(graphs(), pure_llms(), st.data())
def test_textgrad_rule_makes_one_call_per_target_plus_the_loss(pair, llm, data):
    """On any graph, `rules.textgrad_backward()` makes a backward call per (stepping node, target), plus the loss's."""
    graph, params = pair
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), llm)
    rec = RecordingLLM(llm)
    run_sync(backward(graph, params, trace, "The output is wrong.", rules.textgrad_backward()), rec)
    plan = plan_backward(graph, params, include_instructions=True)
    llm_steps = [n for n in plan.steps if graph[n].kind == "llm"]
    expected = sum(len(plan.targets[n]) for n in llm_steps) + (graph.output in llm_steps)
    assert rec.counts().get("backward", 0) == expected


def test_textgrad_backward_shows_instruction_whole_input_output_and_feedback():
    """Each TextGrad backward request shows the node's instruction, all its inputs, its output and its feedback."""
    graph, params = paper_graph()
    trace = run_sync(forward(graph, params, {"question": "What is 2 + 2?"}), HashLLM())
    rec = RecordingLLM(HashLLM())
    run_sync(backward(graph, params, trace, "SEED FEEDBACK", rules.textgrad_backward()), rec)
    answer_calls = [r for r in rec.requests if r.node == "answer" and r.targets != ("answer",)]
    assert sorted(r.targets[0] for r in answer_calls) == ["answer.instruction", "hint_1", "hint_2"]
    loss_call = next(r for r in rec.requests if r.targets == ("answer",))
    assert "SEED FEEDBACK" in loss_call.prompt and str(trace.value("answer")) in loss_call.prompt
    for request in answer_calls:
        for shown in ("Solve the problem.", "What is 2 + 2?", trace.value("hint_1"), trace.value("hint_2")):
            assert shown in request.prompt
        assert "SEED FEEDBACK" not in request.prompt  # it sees the loss call's feedback instead
        assert "answer#" in request.prompt  # HashLLM's loss-call reply: the output's gradient


def test_textgrad_loss_call_failure_fails_the_output_targets():
    """When the loss's backward call fails, the output's targets fail with that reason and nothing else is asked."""
    graph, params = paper_graph()
    trace = run_sync(forward(graph, params, {"question": "q"}), HashLLM())
    llm = RecordingLLM(ScriptedLLM([({"targets": ("answer",)}, "unreadable")], default=HashLLM()))
    grads = run_sync(backward(graph, params, trace, "wrong", rules.textgrad_backward()), llm)
    assert llm.counts()["backward"] == 2  # the call and its one repair
    (failure,) = grads.failures_for("answer.instruction")
    assert grads.partials == () and "loss's backward call" in failure.reason


@settings(max_examples=10)
@given(st.integers(1, 4), st.integers(1, 5))
def test_textgrad_chain_calls(k, n):
    """`optim.textgrad(k)` on the paper's graph: 6 backward calls per error sample, one rewrite per instruction."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), n)
    new, _, counts = observe(optim.textgrad(k=k), step, params, HashLLM())
    assert counts == {"backward": 6 * min(k, n), "rewrite": 3}
    assert set(new.updates) == set(params.trainable())
    gradient = new.param_gradients["answer.instruction"].feedback
    assert gradient.count("<gradient ") == min(k, n) and "Solve the problem." in gradient


def test_textgrad_gate_keeps_ties():
    """With the gate, TextGrad's revert keeps a candidate that ties the best score (it reverts only a drop)."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), 2)
    step = Step(graph, 0, step.train, step.traces, step.scores, step.train, exact_match(), best_score=0.0)
    new, _, _ = observe(optim.textgrad(k=1, gate=True), step, params, HashLLM())
    assert new.candidate_score == 0.0 and new.accepted is True


@settings(max_examples=10)
@given(st.integers(1, 4), st.integers(1, 5))
def test_optoprime_is_one_call_for_every_parameter(k, n):
    """`optim.optoprime(k)` makes exactly one rewrite call, no backward call, and proposes every parameter."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), n)
    new, _, counts = observe(optim.optoprime(k=k), step, params, HashLLM())
    assert counts == {"rewrite": 1}
    assert set(new.updates) == set(params.trainable())


def test_optoprime_request_shows_the_whole_execution():
    """OptoPrime's request shows the code, every instruction, and each selected run's inputs, values and feedback."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), 2)
    rec = RecordingLLM(HashLLM())
    run_sync(optim.optoprime(k=2).update(step, optim.optoprime(k=2).init(params), params), rec)
    (request,) = rec.requests
    assert request.targets == params.trainable()
    for trace, score in zip(step.traces, step.scores):
        for node in ("question", "hint_1", "hint_2", "answer"):
            assert str(trace.value(node)) in request.prompt
        assert score.feedback in request.prompt
    for name in params.trainable():
        assert params.value(name) in request.prompt
    assert "answer = llm(answer.instruction, question, hint_1, hint_2)" in request.prompt


def test_optoprime_keeps_what_the_reply_leaves_out():
    """A reply that changes one variable updates only that one; an unreadable reply updates nothing."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), 2)
    one = ScriptedLLM([], default=lambda r: format_named("improved", {"answer.instruction": "Be exact."}))
    new, _, _ = observe(optim.optoprime(), step, params, one)
    assert dict(new.updates) == {"answer.instruction": "Be exact."}
    new, _, _ = observe(optim.optoprime(), step, params, ScriptedLLM([], default="no blocks"))
    assert dict(new.updates) == {} and "unusable reply" in new.proposals["hint_1.instruction"].reason


@settings(max_examples=8)
@given(st.integers(2, 4), st.integers(1, 3), st.integers(1, 3))
def test_copro_rounds_make_dspys_calls(breadth, depth, n):
    """Per round and parameter: one proposal request per new candidate (breadth - 1 in the first round, then
    breadth); every candidate so far scored on the training set (3 calls an item)."""
    graph, params = paper_graph()
    llm = HashLLM()
    step = scored_step(graph, params, llm, n)
    opt = optim.copro(breadth=breadth, depth=depth)
    state = opt.init(params)
    for d in range(depth):
        step2, state, counts = observe(opt, step, params, llm, state)
        candidates = breadth * (d + 1)  # DSPy re-scores all candidates so far when there are several predictors
        new = breadth - 1 if d == 0 else breadth
        assert counts == {"rewrite": 3 * new, "forward": 3 * candidates * n * 3}
        assert state.round == d + 1
    _, _, counts = observe(opt, step, params, llm, state)
    assert counts == {}


def test_copro_takes_the_best_candidate_and_shows_attempts_in_increasing_order():
    """COPRO keeps each parameter's best-scoring candidate; later rounds show attempts worst first, with scores."""
    graph, params = paper_graph()
    right = "Answer: 4"

    def llm(request):
        if request.purpose == "rewrite":
            return reply_rewrite(request, f"Try candidate {request.draw + 1}.")
        value = right if "Try candidate 2." in request.system and request.node == "answer" else "Answer: 5"
        return reply_forward(request, value)

    step = scored_step(graph, params, llm, 1)
    step = Step(graph, 0, (Example({"question": "What is 0 + 0?"}, "4", id=0),), step.traces, step.scores,
                loss=exact_match())  # fmt: skip
    opt = optim.copro(breadth=3, depth=2)
    new, state, _ = observe(opt, step, params, llm)
    assert new.updates["answer.instruction"] == "Try candidate 2."
    rec = RecordingLLM(llm)
    run_sync(opt.update(step, state, params), rec)
    prompt = next(r.prompt for r in rec.requests if r.purpose == "rewrite" and r.node == "answer.instruction")
    assert prompt.index("Score: 0") < prompt.index("Instruction: Try candidate 2.\nScore: 1")


def test_copro_state_survives_a_checkpoint():
    """COPRO's search state is a run-state type: it round-trips through the checkpoint codec."""
    import json

    from semgrad.core import FrozenMap
    from semgrad.effects._checkpoint import decode, encode

    state = optim.CoproState(
        1,
        FrozenMap({"a.instruction": ("x", "y")}),
        FrozenMap({"a.instruction": ("y",)}),
        FrozenMap({"a.instruction": (("x", 0.5), ("y", 1.0))}),
        FrozenMap({"a.instruction": "y"}),
        FrozenMap({"a.instruction": FrozenMap({"y": FrozenMap({"a.instruction": "y", "b.instruction": "z"})})}),
    )
    assert decode(json.loads(json.dumps(encode(state)))) == state


@given(graphs(), pure_llms(), st.data())
def test_textgrad_partials_name_as_siblings_the_other_inputs_their_request_showed(pair, llm, data):
    """A `rules.textgrad_backward()` partial from an LLM node lists as siblings every other input its request showed."""
    graph, params = pair
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), llm)
    rec = RecordingLLM(llm)
    grads = run_sync(backward(graph, params, trace, "The output is wrong.", rules.textgrad_backward()), rec)
    for partial in grads.partials:
        source = graph[partial.source]
        if source.kind != "llm":
            continue
        (request,) = [r for r in rec.requests if r.node == partial.source and r.targets == (partial.target,)]
        shown = tuple(name for name in source.inputs if f"] {name} (" in request.prompt)
        assert partial.siblings == tuple(name for name in shown if name != partial.target)


def test_copro_returns_the_program_of_its_single_best_evaluation():
    """When a hint_1 candidate makes every answer right, COPRO returns that evaluation's program: the nodes
    scored after it tie and stay as they were, not set to their first tied candidate (DSPy's compile)."""
    graph, params = paper_graph()

    def llm(request):
        if request.purpose == "rewrite":
            return reply_rewrite(request, f"Try {request.node} {request.draw + 1}.")
        if request.node == "hint_1":
            return reply_forward(request, "RIGHT" if "Try hint_1.instruction 2." in request.system else "step")
        return reply_forward(request, "Answer: 4" if request.node == "answer" and "RIGHT" in request.prompt else "x")

    step = scored_step(graph, params, llm, 1)
    step = Step(graph, 0, (Example({"question": "What is 0 + 0?"}, "4", id=0),), step.traces, step.scores,
                loss=exact_match())  # fmt: skip
    new, state, counts = observe(optim.copro(breadth=3, depth=1), step, params, llm)
    assert dict(new.updates) == {"hint_1.instruction": "Try hint_1.instruction 2."}
    assert state.current["hint_2.instruction"] == "Try hint_2.instruction 1."  # the search goes on from the bests


def test_copro_draws_each_candidate_as_its_own_completion_at_its_temperature():
    """Each proposal is one request: draws 0..n-1 of one prompt per parameter, at init_temperature over the
    run's options."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), 1)
    step = attrs.evolve(step, options=FrozenMap({"optimizer": FrozenMap({"temperature": 0.0, "max_tokens": 9})}))
    rec = RecordingLLM(HashLLM())
    opt = optim.copro(breadth=4, depth=1, init_temperature=0.7)
    run_sync(opt.update(step, opt.init(params), params), rec)
    for name in params.trainable():
        mine = [r for r in rec.requests if r.purpose == "rewrite" and r.node == name]
        assert [r.draw for r in mine] == [0, 1, 2] and len({r.prompt for r in mine}) == 1
        assert all(dict(r.options) == {"temperature": 0.7, "max_tokens": 9} for r in mine)


@settings(max_examples=30)
@given(st.integers(1, 9), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2))
def test_textgrad_batches_hand_out_every_item_once_per_epoch(n, k, seed, epoch):
    """TextGrad's batches of k, right answers included, cover each item exactly once per epoch (a shuffled
    loader), the last batch of an epoch possibly shorter."""
    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), n)
    per_epoch = -(-n // k)
    seen = []
    for b in range(per_epoch):
        at = attrs.evolve(step, iteration=epoch * per_epoch + b)
        new, _, _ = observe(optim.sample_batch(k, seed=seed), at, params, HashLLM())
        assert len(new.selected) == min(k, n - b * k)
        seen.extend(new.selected)
    assert sorted(seen) == list(range(n))


def _one_right_of_three(instruction=None):
    """A step on three items whose answers carry reasoning outside the result; only the second is right."""
    graph, params = paper_graph()
    if instruction is not None:
        params = params.with_values({"answer.instruction": instruction})

    def llm(request):
        if request.purpose == "forward" and request.node == "answer":
            right = "What is 1 + 1?" in request.prompt
            return reply_forward(request, "2" if right else "-1", reasoning=f"REASONING of {request.sample}")
        return HashLLM()(request)

    examples = [Example({"question": f"What is {i} + {i}?"}, str(2 * i), id=i) for i in range(3)]
    results = run_sync(optim.evaluate(graph, params, examples, exact_match()), llm)
    step = Step(graph, 0, tuple(examples), tuple(t for t, _ in results), tuple(s for _, s in results),
                loss=exact_match())  # fmt: skip
    assert [s.correct for s in step.scores] == [False, True, False]
    return graph, params, step, llm


def test_textgrad_backpropagates_every_item_of_its_batch():
    """A batch of 3 with one right answer makes 18 backward calls (6 an item), not 12; errors_only keeps 12."""
    graph, params, step, llm = _one_right_of_three()
    _, _, counts = observe(optim.textgrad(), step, params, llm)
    assert counts == {"backward": 18, "rewrite": 3}
    _, _, counts = observe(optim.textgrad(k=3, errors_only=True), step, params, llm)
    assert counts == {"backward": 12, "rewrite": 3}


def test_textgrad_shows_the_whole_reply_and_short_variables():
    """TextGrad's backward and update prompts show the answer node's whole reply, reasoning included; the
    variable criticised is shown as TextGrad shows it: over 20 words, its first and last ten words."""
    graph, params, step, llm = _one_right_of_three(" ".join(f"w{i}" for i in range(30)))
    rec = RecordingLLM(llm)
    run_sync(optim.textgrad().update(step, optim.textgrad().init(params), params), rec)
    shown = [r for r in rec.requests if r.node == "answer" and r.targets != ("answer",)]
    assert shown and all("REASONING of" in r.prompt for r in shown)
    update = next(r for r in rec.requests if r.purpose == "rewrite" and r.node == "answer.instruction")
    assert update.prompt.count("REASONING of") == 3  # one gradient per item, each with its whole reply
    short = "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 (...) w20 w21 w22 w23 w24 w25 w26 w27 w28 w29"
    variable = next(r for r in shown if r.targets == ("answer.instruction",))
    assert f"<variable>\n{short}\n</variable>" in variable.prompt
    assert f"<variable>\n{short}\n</variable>" in update.prompt


def test_optoprime_asks_for_the_packages_json_in_json_mode_and_reads_it():
    """OptoPrime's call asks for JSON mode and at most 4,096 tokens over the run's options, its prompt adds no
    sentence the package lacks, and a JSON reply's suggestion becomes the updates (reasoning and answer ignored)."""
    import json

    graph, params = paper_graph()
    step = scored_step(graph, params, HashLLM(), 2)
    step = attrs.evolve(step, options=FrozenMap({"optimizer": FrozenMap({"temperature": 0.0, "max_tokens": 1024})}))
    reply = json.dumps({"reasoning": "r", "answer": "", "suggestion": {"answer.instruction": "Be exact."}})
    rec = RecordingLLM(ScriptedLLM([], default=reply))
    new, _ = run_sync(optim.optoprime().update(step, optim.optoprime().init(params), params), rec)
    (request,) = rec.requests
    assert dict(request.options) == {"temperature": 0.0, "max_tokens": 4096, "response_format": {"type": "json_object"}}
    assert "general improvements" not in request.prompt and '"suggestion"' in request.prompt
    assert dict(new.updates) == {"answer.instruction": "Be exact."}
    rec = RecordingLLM(HashLLM())
    run_sync(optim.optoprime(json_mode=False).update(step, optim.optoprime().init(params), params), rec)
    assert "response_format" not in rec.requests[0].options
    from semgrad.core import request_key

    assert request_key(request) != request_key(attrs.evolve(request, options={"max_tokens": 4096}))  # keyable
