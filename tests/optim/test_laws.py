"""Transform laws, checked by observation under pure fakes."""

from __future__ import annotations

import hashlib

import attrs
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import Example, LLMError, LLMFailure, ProtocolError, optim, request_key
from semgrad.core.optim import Step, apply_updates, chain, identity, masked
from semgrad.core.programs import pure
from semgrad.core.scoring import exact_match
from semgrad.effects import fit_sync, run_sync
from semgrad.testing import graphs, inputs_for, pure_llms
from semgrad.topologies import paper_graph

STAGES = [
    lambda: optim.select_error_samples(2, seed=3),
    lambda: optim.backpropagate(),
    lambda: optim.aggregate(),
    lambda: optim.propose_rewrite(),
    lambda: optim.full_update(),
]


@st.composite
def steps(draw):
    """A scored training step over a random graph (every sample wrong: targets never match)."""
    graph, params = draw(graphs())
    llm = draw(pure_llms())
    examples = [Example(draw(inputs_for(graph)), "never matches", id=i) for i in range(draw(st.integers(1, 4)))]
    results = run_sync(optim.evaluate(graph, params, examples, exact_match()), llm)
    step = Step(
        graph, 0, tuple(examples), tuple(t for t, _ in results), tuple(s for _, s in results), loss=exact_match()
    )
    return step, params, llm


def observe(transform, step, params, llm):
    """Run one update: (new step, requests made in order)."""
    rec = RecordingLLM(llm)
    new_step, _ = run_sync(transform.update(step, transform.init(params), params), rec)
    return new_step, rec.requests


def _pipeline():
    return [f() for f in STAGES]


@given(steps())
def test_chain_with_identity_behaves_like_the_transform(data):
    """chain(identity(), t) and chain(t, identity()) make the same requests and outputs as t."""
    step, params, llm = data
    t = chain(*_pipeline())
    reference = observe(t, step, params, llm)
    assert observe(chain(identity(), t), step, params, llm) == reference
    assert observe(chain(t, identity()), step, params, llm) == reference


@given(steps(), st.integers(1, 4))
def test_chain_is_associative(data, cut):
    """chain(chain(a, b), c) == chain(a, chain(b, c)): same requests, same outputs."""
    step, params, llm = data
    ts = _pipeline()
    left = chain(chain(*ts[:cut]), chain(*ts[cut:]))
    assert observe(left, step, params, llm) == observe(chain(*ts), step, params, llm)


@given(steps())
def test_chain_equals_applying_each_stage_by_hand(data):
    """chain(t1, ..., tn) equals running t1, then t2, ... by hand, threading the step."""
    step, params, llm = data
    by_hand, rec = step, RecordingLLM(llm)
    for t in _pipeline():
        by_hand, _ = run_sync(t.update(by_hand, t.init(params), params), rec)
    assert observe(chain(*_pipeline()), step, params, llm) == (by_hand, rec.requests)


@given(steps(), st.data())
def test_masked_never_updates_masked_parameters(data, draw):
    """masked(t, names) proposes and updates only the named parameters, each as t alone updates it."""
    step, params, llm = data
    trainable = params.trainable()
    allowed = draw.draw(st.lists(st.sampled_from(trainable), unique=True) if trainable else st.just([]))
    new, requests = observe(masked(chain(*_pipeline()), allowed), step, params, llm)
    assert set(new.updates or {}) <= set(allowed)
    assert set(new.proposals or {}) <= set(allowed)
    assert all(r.node in allowed for r in requests if r.purpose == "rewrite")
    assert new.active is None
    unmasked, _ = observe(chain(*_pipeline()), step, params, llm)
    assert dict(new.updates or {}) == {k: v for k, v in (unmasked.updates or {}).items() if k in allowed}
    event(f"masked away {len(set(unmasked.updates or {}) - set(allowed))} of {len(unmasked.updates or {})} updates")


@given(steps(), st.integers(0, 100))
def test_same_seeds_give_the_same_run(data, seed):
    """Two runs of the same optimizer with the same seed give equal steps and requests."""
    step, params, llm = data
    t = optim.neighbor_sgd(2, seed=seed, gate=False)
    assert observe(t, step, params, llm) == observe(optim.neighbor_sgd(2, seed=seed, gate=False), step, params, llm)


@given(steps())
def test_apply_updates_is_pure_and_total(data):
    """apply_updates returns new params with exactly the updated values changed."""
    step, params, llm = data
    new, _ = observe(chain(*_pipeline()), step, params, llm)
    updated = apply_updates(params, new.updates)
    for name in params:
        expected = new.updates.get(name, params.value(name)) if new.updates else params.value(name)
        assert updated.value(name) == expected
    assert apply_updates(params, None) is params


def test_misordered_stages_say_which_stage_must_come_first():
    """A stage run before the stage it depends on fails with a message naming that stage."""
    import pytest

    from semgrad.core import ProtocolError
    from semgrad.topologies import paper_graph

    graph, params = paper_graph()
    t = chain(optim.propose_rewrite())
    with pytest.raises(ProtocolError, match=r"propose_rewrite needs step.param_gradients; put aggregate\(\) before it"):
        t.update(Step(graph), t.init(params), params)
    t = optim.backpropagate()
    with pytest.raises(ProtocolError, match=r"put select_error_samples\(\) before it"):
        t.update(Step(graph), t.init(params), params)


def test_hash_llm_is_a_pure_fake():
    """HashLLM answers equal requests equally (the property the laws rely on)."""
    from semgrad.core import LLMRequest, Message

    r = LLMRequest((Message("user", "x"),), purpose="rewrite", node="a")
    assert HashLLM("s")(r) == HashLLM("s")(r) != HashLLM("t")(r)


@given(steps(), st.integers(2, 5), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_a_skipped_step_reaches_the_gate_as_nothing_to_update(data, k, by_predicate, held_out, always, outside):
    """every_k or apply_if wrapping the stages that make a candidate (the update stage inside or after it), before
    the gate, on a step it skips: no call at all (the gate's included), no update, and the gate's verdict on no
    candidate (rejected, unless always_accept), on the training items and on a validation set alike."""
    step, params, llm = data
    if held_out:
        step = attrs.evolve(step, validation=step.train)
    stages = _pipeline()
    inner = chain(*stages[:-1]) if outside else chain(*stages)
    wrapped = optim.apply_if(lambda s: False, inner) if by_predicate else optim.every_k(inner, k)
    after = [stages[-1]] if outside else []
    new, requests = observe(chain(wrapped, *after, optim.validation_gate(always_accept=always)), step, params, llm)
    assert not requests
    assert not new.updates and new.accepted is always and new.candidate_score is None
    assert new.report[-1].notes[0].startswith("nothing to update")


@given(steps())
def test_a_gate_after_stages_that_never_update_still_says_what_to_add(data):
    """validation_gate after stages that propose but never update, wrapped in every_k or not, fails on a step that
    ran them with the message naming the update stage to add."""
    step, params, llm = data
    propose = chain(*_pipeline()[:-1])
    for stages in (propose, optim.every_k(propose, 1)):
        t = chain(stages, optim.validation_gate())
        with pytest.raises(ProtocolError, match=r"validation_gate needs step.updates; put an update stage such as"):
            observe(t, step, params, llm)


@given(steps(), st.data())
def test_masked_refuses_a_name_that_is_not_a_trainable_parameter_when_it_starts(data, draw):
    """masked(t, names) with a name that is no trainable parameter (a node's name, a frozen parameter, a typo) fails
    at init(params), before any call, as neighbor_sgd(only=...) does, naming it and the ones to choose from."""
    step, params, llm = data
    trainable = params.trainable()
    others = [n for n in (*step.graph.nodes, *params, "answer", "") if n not in trainable]
    wrong = draw.draw(st.one_of(st.sampled_from(others), st.text(max_size=8).filter(lambda n: n not in trainable)))
    right = draw.draw(st.lists(st.sampled_from(trainable), unique=True)) if trainable else []
    names = draw.draw(st.permutations([*right, wrong]))
    message = f"no trainable parameter {wrong!r}; choose from: {', '.join(trainable)}"
    for t in (masked(chain(*_pipeline()), names), optim.neighbor_sgd(only=names)):
        with pytest.raises(ValueError) as raised:
            t.init(params)
        assert str(raised.value) == message
    assert masked(chain(*_pipeline()), [n for n in names if n != wrong]).init(params) is not None


@given(st.integers(1, 8), st.integers(1, 8))
def test_a_transform_equals_only_itself(k, other):
    """A transform equals itself and no other, however alike; equal transforms hash alike."""
    t = optim.neighbor_sgd(k=k)
    assert t == t and hash(t) == hash(t) and {t: 1}[t] == 1
    assert t != optim.neighbor_sgd(k=other)
    assert chain(identity(), t) != chain(identity(), t)


def _failing_backward(llm, salt):
    """`llm`, with a seeded share of its backward calls failed (and their repairs unreadable)."""

    def answer(request):
        if request.purpose == "backward":
            roll = hashlib.sha256(f"{salt}:{request_key(request)}".encode()).digest()[0]
            if roll < 64:
                raise LLMFailure(LLMError("server", "injected failure"))
            if roll < 128:
                return "I would rather not say."
        return llm(request)

    return answer


@given(steps(), st.text(max_size=4))
def test_an_instruction_is_rewritten_only_from_samples_whose_feedback_reached_its_node(data, salt):
    """aggregate() gives an instruction an example, with feedback, for exactly the samples its node was told of."""
    step, params, llm = data
    llm = _failing_backward(llm, salt)
    before = chain(optim.select_error_samples(2, seed=1), optim.backpropagate())
    new, _ = run_sync(before.update(step, before.init(params), params), llm)
    grads = new.gradients
    gathered, _ = run_sync(optim.aggregate().update(new, optim.aggregate().init(params), params), llm)
    for name in new.trainable(params):
        node = params[name].node
        if node is None:
            continue
        found = gathered.param_gradients.get(name)
        examples = found.examples if found is not None else ()
        assert all(e.feedback is not None for e in examples), (name, examples)
        told = {
            new.traces[i].sample
            for i in new.selected
            if node == new.graph.output
            or any(f.value is not None for f in grads.feedback_for(node) if f.sample == new.traces[i].sample)
            or any(p.sample == new.traces[i].sample for p in grads.for_node(node))
        }
        assert {e.sample for e in examples} == told, (name, examples, grads)


def test_constraints_given_as_one_string_are_refused():
    """propose_rewrite, and each optimizer that hands it constraints, refuses one string (each character was a rule)."""
    for make in (optim.propose_rewrite, optim.neighbor_sgd, optim.tgd, optim.textgrad):
        with pytest.raises(TypeError, match=r"constraints: pass a sequence of strings, such as \['Keep it short.'\]"):
            make(constraints="Keep it short.")


@pytest.mark.parametrize(
    ("combinator", "build"),
    [
        ("named_chain", lambda t: optim.named_chain(("stage", t))),
        ("masked", lambda t: optim.masked(t, ["answer.instruction"])),
        ("apply_if", lambda t: optim.apply_if(lambda step: True, t)),
        ("every_k", lambda t: optim.every_k(t, 2)),
        ("chain", lambda t: optim.chain(t)),
    ],
)
def test_a_combinator_refuses_a_factory_left_uncalled_when_built(combinator, build):
    """Each combinator, as chain does, refuses a factory passed uncalled with a TypeError naming it, not at run time."""
    with pytest.raises(TypeError, match=rf"^{combinator} takes transforms, got function \(a factory: call it"):
        build(optim.identity)


def test_named_chain_refuses_what_is_not_a_name_and_transform_pair():
    """named_chain("sel", t) (no pair) is a TypeError saying it takes (name, transform) pairs."""
    with pytest.raises(TypeError, match=r"named_chain takes \(name, transform\) pairs, got 'sel'"):
        optim.named_chain("sel", optim.identity())  # type: ignore[arg-type]


def _misshapen_stages():
    """Stages of one's own that break the contract in the usual ways, each with what it returned."""
    return [
        (optim.stateless(lambda step, params: step, "bare"), r"stateless stage 'bare' returned a Step"),
        (optim.stateless(lambda step, params: pure((step, None)), "pair"), r"stateless stage 'pair' yielded a tuple"),
        (optim.Transform(lambda p: None, lambda s, st, p: pure(s), "one"), r"stage 'one' yielded a Step"),
        (optim.Transform(lambda p: None, lambda s, st, p: (s, st), "raw"), r"stage 'raw' returned a tuple"),
    ]


@pytest.mark.parametrize("alone", [False, True])
def test_a_stage_that_breaks_the_update_contract_is_named_with_what_to_return(alone):
    """A stage whose update is no program of (step, state), in a chain or alone in fit, is a ProtocolError naming it."""
    graph, params = paper_graph()
    train = [{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}]
    for stage, said in _misshapen_stages():
        optimizer = stage if alone else optim.chain(optim.select_error_samples(1), stage)
        with pytest.raises(ProtocolError, match=said + r".*pure\("):
            fit_sync(graph, params, optimizer, train=train, llm=HashLLM(), iterations=1)


def test_a_backward_stage_refuses_a_rule_left_uncalled_before_any_call():
    """optim.backpropagate(rules.per_edge), or neighbor_sgd(rule=rules.per_edge), is a TypeError when built."""
    from semgrad.core import rules

    for build in (lambda: optim.backpropagate(rules.per_edge), lambda: optim.neighbor_sgd(rule=rules.per_edge)):
        with pytest.raises(TypeError, match=r"rule must be a backward rule .*got function \(a factory: call it"):
            build()


def test_a_loss_factory_left_uncalled_is_refused_before_any_call():
    """fit(loss=normalized_match) and evaluate(..., normalized_match) are TypeErrors saying to call it, no call made."""
    from semgrad.core import as_examples
    from semgrad.core.scoring import normalized_match

    graph, params = paper_graph()
    train = [{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}]
    llm = RecordingLLM(HashLLM())
    said = r"loss must be a loss\(example, trace\).*normalized_match takes \(\) \(a factory: call it"
    with pytest.raises(TypeError, match=said):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=llm, iterations=1, loss=normalized_match)
    with pytest.raises(TypeError, match=said):
        optim.evaluate(graph, params, as_examples(train), normalized_match)  # type: ignore[arg-type]
    assert llm.requests == ()


def test_evaluate_refuses_plain_dicts_naming_as_examples():
    """optim.evaluate on the dicts fit takes is a TypeError pointing at as_examples, not "'dict' has no 'inputs'"."""
    from semgrad.core.scoring import normalized_match

    graph, params = paper_graph()
    with pytest.raises(TypeError, match=r"evaluate takes Examples, got a dict at 0; as_examples\(items\) makes them"):
        optim.evaluate(graph, params, [{"inputs": {"question": "q"}, "target": "7"}], normalized_match())


@pytest.mark.parametrize("bound", [0, -1])
def test_a_bound_below_one_character_is_refused_when_built(bound):
    """aggregate(max_chars=0) and propose_rewrite(max_chars=0) are ValueErrors, as rules.concat(max_chars=0) is."""
    for stage, build in (("aggregate", optim.aggregate), ("propose_rewrite", optim.propose_rewrite)):
        with pytest.raises(ValueError, match=rf"^{stage}: max_chars must be positive, got {bound}$"):
            build(max_chars=bound)


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (lambda: optim.neighbor_sgd(k=2.5), r"select_error_samples needs a whole number k >= 1, got 2\.5"),
        (lambda: optim.select_error_samples(True), r"select_error_samples needs a whole number k >= 1, got True"),
        (lambda: optim.every_k(optim.identity(), 1.5), r"every_k needs a whole number k >= 1, got 1\.5"),
        (lambda: optim.copro(breadth=4.0), r"copro needs a whole number breadth > 1, got 4\.0"),
        (lambda: optim.copro(depth=2.5), r"copro needs a whole number depth >= 1, got 2\.5"),
    ],
)
def test_a_count_that_is_no_whole_number_is_refused_when_built(build, said):
    """k, breadth and depth must be whole numbers: neighbor_sgd(k=2.5) failed in its first update, after forwards."""
    with pytest.raises(ValueError, match=said):
        build()


def test_an_example_of_no_mapping_and_a_nan_min_gain_are_refused_with_what_to_write():
    """Example("q", "7") is a TypeError asking for a mapping; validation_gate(min_gain=nan) a ValueError."""
    with pytest.raises(TypeError, match=r"Example's inputs must be a mapping .* got str"):
        Example("What is 3 + 4?", "7")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_gain must be a number, got nan"):
        optim.validation_gate(min_gain=float("nan"))
    assert Example({"question": "q"}, "7").inputs["question"] == "q"
