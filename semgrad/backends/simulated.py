"""The built-in simulated LLM: deterministic, offline, and clearly not a real model.

It lets ``semgrad demo``, ``semgrad run --backend simulated`` and the tests run a whole
optimisation with no network and no API key. It is a **simulation of the mechanism**
(which information each call sees, and what a call can do with it), never evidence that the
method works on real models. Its rules, all derived from the text each prompt *shows*:

* Each question needs one of the `SKILLS` (a reasoning step; which one follows from the
  question's text and the seed), and about one question in three is *strict*: it also
  needs the final node's instruction to contain `VERIFY`.
* **Forward.** A hint (any non-final node) writes one line of notes applying each skill
  its instruction names. The notes never name the node: like a real model's, a reply
  depends on what the request shows, so two nodes sent the very same request get the
  same reply (and an in-run memo may answer the second from the first). The final node answers right when its
  prompt shows the needed skill (in its instruction or in a hint's notes) and, for a
  strict question, `VERIFY`; otherwise it gives a plausible wrong answer.
* **Backward.** The reply finds the question among the inputs it is shown and so the
  missing skill, and each input's notes by the label the prompt gives that input
  (``[2] hint_1 (...):``). When it sees the other inputs (siblings), it asks only the input whose
  notes apply the fewest skills to add it, and tells the others to keep what they do.
  When it sees one input alone (per-edge, the "no neighbours" ablation), the question is
  not shown either: it guesses a skill from the output and feedback, the same guess for
  every input.
* **Rewrite.** A hint's instruction keeps at most `CAPACITY` skills. The rewrite adds
  the skills that the feedback it is shown asks for, most-asked first, dropping the
  oldest beyond capacity; told to keep the instruction, it keeps it. Shown no feedback
  at all (the "no gradients" ablation), it can only rephrase: it adds no skill. A final
  node's rewrite adds `VERIFY` when it is shown an expected answer.
* **Several values in one reply** (the baselines' requests with ``targets``): OptoPrime's
  call shows every run, so it finds the questions' missing skills as a backward call with
  siblings would and gives each to the least-loaded hint; COPRO's generation call shows no
  question, so each candidate adds a guessed skill (or `VERIFY`), left to the scoring.
* **GEPA's reflection** (one component, shown what it read and wrote per example and the feedback on the
  system's answer): a hint reads the questions the system got wrong and adds the skills they need, most
  needed first; it sees neither its sibling nor which node caused the error, so every hint gets the same
  skills. The final node is rewritten as above.

So with neighbours, the hints split the skills between them; without, they all get the
same guesses; without gradients, nothing is learned; with one parameter, the other nodes
never learn; without the gate, an update that drops a skill is kept. Every rule is
visible in the replies' text, which the report shows.

**Any graph** (``SimulatedLLM(answers, graph=graph)``, as ``semgrad run my_system.py:build
--data items.jsonl`` builds it). The answers are keyed by the text of the graph's first input
(the item); the rules above hold, and the graph gives each node its role:

* The *answering* node is the output (or, when the output is a function node, the LLM nodes
  that feed it through function nodes); every other LLM node writes notes.
* A node whose successor does not read the item itself *restates* it: its notes end with a
  line ``The item: ...``, so the nodes after it know which item they work on (an
  extract -> judge -> answer chain answers from the item the extractor read). Notes apply the
  steps the node's instruction holds and the steps its inputs' notes apply, so a step held
  anywhere upstream reaches the answer.
* **Backward at a node that reads other nodes**, not the answering one. A call that shows the
  node's task (neighbour-aware; TextGrad's call about one input) knows what the node itself
  will do: its feedback asks it for steps, which its rewrite adds, dropping its oldest beyond
  capacity. When the new steps fill the node (its other samples may ask for more, which it
  cannot see), the call hands each step the node applies now to its least-loaded input
  (unless an input applies it already); the other inputs are told to keep what they do. A
  call that shows one input alone (per edge) sees neither the task nor the siblings: it asks
  that input for the step the question needs (when the input restates the question) or
  guesses, as above -- so in a chain the no-neighbours ablation asks every node for the same
  steps and holds fewer distinct ones. A call about the node's own instruction alone
  (TextGrad's) follows the rules above.
* An answering node that reads no other LLM node has no one to hand steps to: it *holds*
  steps itself, its rewrite adding the steps of the questions it is shown beside their
  expected answers (and `VERIFY`), a COPRO candidate a guessed step.

On the paper's graphs (hints read the question, the answer reads the question and the hints)
no node restates, only the answer hands steps on and it reads other nodes, so a graph changes
none of their replies (``tests/backends/test_simulated_graphs.py`` checks every reply of a run).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core import FrozenMap, Graph, LLMRequest
from ..core._parse import format_tagged, parse_tagged
from ..core.optim._copro import COPRO_SYSTEM
from ..core.optim._gepa import GEPA_SYSTEM
from ..core.optim._named_blocks import format_named
from ..core.scoring import parse_number
from .fake import HashLLM, reply_backward, reply_forward

__all__ = ["CAPACITY", "SKILLS", "VERIFY", "SimulatedLLM"]

#: The reasoning steps questions need (simulated), in a fixed order.
SKILLS = (
    "Track every quantity as it changes.",
    "Check each intermediate result before using it.",
    "Restate exactly what is asked before answering.",
    "Draw the situation as a small table first.",
    "Name the rule that decides the answer.",
)

#: What the final node's instruction must contain for a strict question.
VERIFY = "Compare the answer with every hint before replying."

#: How many skills a hint's instruction holds; a rewrite beyond it drops the oldest.
CAPACITY = 2

_ASK = "Add this step to the instruction: "
_KEEP = "Keep this input as it is"
_REPHRASE = "Be thorough."
#: The version of the rules above, part of `SimulatedLLM.identity` so a cache never mixes two versions.
_RULES = 5


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


class SimulatedLLM:
    """A deterministic stand-in for a real LLM whose replies depend on what each prompt shows.

    A simulation of the mechanism for tests and demos; see the module doc for its rules.

    Args:
        answers: The right answer per question text (questions it does not know
            get a plausible wrong answer).
        skills: The reasoning steps questions need (see module doc).
        seed: Varies which skill each question needs, which are strict, and guesses.
        final_nodes: Names of the nodes that give the system's answer (default: the
            `graph`'s answering nodes, else ``answer``, ``final`` and ``output``).
        graph: The system's graph, which gives each node its role (see module doc);
            `answers` are then keyed by the text of its first input.

    Examples:
        >>> from semgrad.core import Message
        >>> llm = SimulatedLLM({"What is 3 + 4?": "7"})
        >>> need = llm.needed("What is 3 + 4?")
        >>> prompt = "[1] question (q):\\nWhat is 3 + 4?"
        >>> r = LLMRequest((Message("system", f"{need} {VERIFY}"), Message("user", prompt)), node="answer")
        >>> llm(r).endswith("<result>\\n7\\n</result>")
        True
    """

    is_async = False

    def __init__(
        self,
        answers: Mapping[str, str] | None = None,
        *,
        skills: tuple[str, ...] = SKILLS,
        seed: int = 0,
        final_nodes: tuple[str, ...] | None = None,
        graph: Graph | None = None,
    ) -> None:
        if not skills:
            raise ValueError("SimulatedLLM needs at least one skill")
        self.answers = dict(answers or {})
        self.skills = tuple(skills)
        self.seed = seed
        self.graph = graph
        if final_nodes is None:
            final_nodes = _answering(graph) if graph is not None else ("answer", "final", "output")
        self.final_nodes = tuple(final_nodes)
        self._restating = _restating(graph, self.final_nodes) if graph is not None else ()
        self._holding = _holding(graph, self.final_nodes) if graph is not None else ()
        self._fallback = HashLLM(salt=f"simulated:{seed}")
        self._by_length = sorted(self.answers, key=len, reverse=True)

    # --- the world's facts --------------------------------------------------------------------

    @property
    def identity(self) -> FrozenMap[str, Any]:
        """What its replies depend on besides the request: seed, skills and answers (a digest), for caches.

        Examples:
            >>> one, two = SimulatedLLM({"q": "1"}), SimulatedLLM({"q": "2"})
            >>> one.identity == SimulatedLLM({"q": "1"}).identity != two.identity
            True
        """
        answers = json.dumps(sorted(self.answers.items()), ensure_ascii=False)
        facts: dict[str, Any] = {
            "provider": "simulated",
            "rules": _RULES,
            "seed": self.seed,
            "skills": self.skills,
            "final_nodes": self.final_nodes,
            "answers": f"{_digest(answers):x}",
        }
        if self.graph is not None:
            facts.update(graph=self.graph.fingerprint, restating=self._restating, holding=self._holding)
        return FrozenMap(facts)

    def needed(self, question: str) -> str:
        """The skill a question needs."""
        return self.skills[_digest(f"{self.seed}:{question}") % len(self.skills)]

    def strict(self, question: str) -> bool:
        """Whether a question also needs `VERIFY` in the final node's instruction."""
        return _digest(f"strict:{self.seed}:{question}") % 3 == 0

    def _shown_skills(self, text: str) -> list[str]:
        flat = _flat(text)
        return [s for s in self.skills if _flat(s).rstrip(".") in flat]

    def _question(self, prompt: str) -> str | None:
        return next((q for q in self._by_length if q and q in prompt), None)

    def _is_final(self, request: LLMRequest) -> bool:
        return request.node in self.final_nodes

    # --- replies --------------------------------------------------------------------------------

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose == "forward":
            return self._forward(request)
        if request.purpose == "backward":
            return self._backward(request)
        if request.purpose == "rewrite":
            return self._rewrite(request)
        if request.purpose == "critique":
            asks = self._asks(request.prompt)
            text = " ".join(f"{_ASK}{s}" for s in asks) or "Say how to reason and how to check the answer."
            return format_tagged("critique", text)
        return self._fallback(request)

    def _text(self, request: LLMRequest) -> str:
        return "\n".join(m.content for m in request.messages)

    def _forward(self, request: LLMRequest) -> str:
        text = self._text(request)
        question = self._question(text)
        if not self._is_final(request):
            own = self._shown_skills(text)
            applied = " ".join(s.rstrip(".") + " (applied)." for s in own) or "No particular method."
            numbers = re.findall(r"[0-9]+", request.prompt)
            facts = f"Facts: {', '.join(numbers[:4]) or 'none'}."
            notes = f"Notes: {applied} {facts}"
            if question is not None and request.node in self._restating:
                notes += f"\nThe item: {question}"
            return reply_forward(request, notes)
        if question is None:
            return reply_forward(request, "unknown")
        right = self.answers[question]
        need = self.needed(question)
        has_skill = need in self._shown_skills(text)
        verified = not self.strict(question) or _flat(VERIFY).rstrip(".") in _flat(text)
        return reply_forward(request, right if has_skill and verified else self._wrong(right))

    @staticmethod
    def _wrong(right: str) -> str:
        number = parse_number(right)
        if number is not None and re.fullmatch(r"-?[\d,.$]+", right.strip()):
            return str(int(number) + 1 if number.is_integer() else number + 1)
        letter = re.fullmatch(r"\(([A-Za-z])\)", right.strip())
        if letter:
            return f"({chr((ord(letter.group(1).upper()) - 64) % 5 + 65)})"
        flips = {"yes": "No", "no": "Yes", "true": "False", "false": "True", "valid": "invalid", "invalid": "valid"}
        return flips.get(right.strip().casefold(), f"not {right}")

    @staticmethod
    def _notes(text: str, target: str) -> str | None:
        """The notes of input `target` in a prompt that lists its inputs (``[i] name (role):`` then the value)."""
        found = re.search(rf"^\[\d+\] {re.escape(target)} \(.*\):\n(Notes:[^\n]*)", text, re.MULTILINE)
        return found.group(1) if found else None

    def _backward(self, request: LLMRequest) -> str:
        if self.graph is not None and not self._is_final(request):
            handed = self._hand_over(request)
            if handed is not None:
                return handed
        text = self._text(request)
        question = self._question(text)
        targets = request.targets
        if question is None:  # it cannot tell which step was missed: it guesses from the output and feedback
            seen = self._output_and_feedback(request.prompt)
            guess = self.skills[_digest(f"guess:{self.seed}:{seen}") % len(self.skills)]
            return reply_backward(
                request,
                {t: f"The answer is wrong (the question is not shown; a guess). {_ASK}{guess}" for t in targets},
            )
        need = self.needed(question)
        visible = [t for t in targets if self._notes(text, t) is not None]
        if len(visible) <= 1:  # one input alone: it cannot know what its siblings do
            return reply_backward(request, {t: f"The answer missed a step. {_ASK}{need}" for t in targets})
        load = {t: len(self._shown_skills(self._notes(text, t) or "")) for t in targets}
        order = sorted(targets, key=lambda t: (load[t], (targets.index(t) - self.skills.index(need)) % len(targets)))
        chosen = order[0]
        others = ", ".join(t for t in targets if t != chosen)
        replies = {
            t: (
                f"The answer missed a step that no input applies; {others or 'no other input'} already "
                f"carry more. {_ASK}{need}"
                if t == chosen
                else f"{_KEEP}; {chosen} is asked to add the missing step."
            )
            for t in targets
        }
        return reply_backward(request, replies)

    def _hand_over(self, request: LLMRequest) -> str | None:
        """An inner node's backward reply when the call shows its task (see module doc), else None.

        The node's rewrite will add the steps its feedback asks for and drop its oldest beyond
        capacity; when the new steps fill it, each step it applies now, which a rewrite asked for more
        steps by other samples would drop, goes to the input that applies the fewest steps, unless an
        input applies it already, and the other inputs keep what they do. The node's own instruction,
        when it is a target beside inputs, is asked for the steps its feedback asks (alone, as TextGrad
        asks about it, the rules of the paper's graphs answer).
        """
        node = request.node or ""
        own = f"{node}.instruction"
        task = re.search(r"<(task|system_prompt)>\n?(.*?)\n?</\1>", request.prompt, re.DOTALL)
        if task is None or request.targets == (own,):  # one input alone, or the instruction alone: as above
            return None
        current = task.group(2)
        feedback = "\n".join(re.findall(r"<feedback>\n?(.*?)\n?</feedback>", request.prompt, re.DOTALL))
        asks = self._asks(feedback)
        held = self._shown_skills(current)
        full = len(set(held) | set(asks)) >= CAPACITY  # filled: more asks would drop the rest
        text = self._text(request)
        inputs = [t for t in request.targets if t != own]
        applied = {t: self._shown_skills(self._notes(text, t) or "") for t in inputs}
        asked: dict[str, list[str]] = {t: [] for t in inputs}
        for skill in (s for s in held if full and s not in asks):
            if inputs and not any(skill in applied[t] for t in inputs):
                chosen = min(inputs, key=lambda t: (len(applied[t]) + len(asked[t]), inputs.index(t)))
                asked[chosen].append(skill)
        replies = {}
        for target in request.targets:
            if target == own:
                replies[target] = " ".join(f"{_ASK}{s}" for s in asks) or f"{_KEEP}."
            elif asked[target]:
                steps = " ".join(f"{_ASK}{s}" for s in asked[target])
                replies[target] = f"{node} takes on a new step and has no room left for one it applies now. {steps}"
            else:
                replies[target] = f"{_KEEP}; {node} applies the steps it is asked for itself."
        return reply_backward(request, replies)

    @staticmethod
    def _output_and_feedback(prompt: str) -> str:
        """The output and feedback a per-edge backward prompt shows, and nothing about the input asked
        about (its name, role and notes), so every input of one node gets the same guess."""
        shown = re.findall(r"<(output|feedback)>\n?(.*?)\n?</\1>", prompt, re.DOTALL)
        if shown:
            return "\n".join(text for _, text in shown)
        return re.sub(r"Notes:[^\n]*", "", prompt)

    def _asks(self, text: str) -> list[str]:
        counts = Counter(s for s in self.skills for _ in range(_flat(text).count(_flat(_ASK + s).rstrip("."))))
        return [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], self.skills.index(kv[0])))]

    def _rewrite(self, request: LLMRequest) -> str:
        if request.targets:
            return self._rewrite_each(request)
        if request.system == COPRO_SYSTEM:  # one COPRO candidate per request, its draw the candidate's index
            return format_tagged("improved", self._copro_candidate(request.node or "", request.prompt, request.draw))
        if request.system == GEPA_SYSTEM:
            return format_tagged("improved", self._reflect(request.node or "", request.prompt))
        current = parse_tagged(request.prompt, ["current"]).value_or("")
        return format_tagged("improved", self._improve(request.node or "", current, self._text(request)))

    def _improve(self, name: str, current: str, text: str) -> str:
        """The rewrite of parameter `name` whose value is `current`, from what `text` shows."""
        node = name.removesuffix(".instruction")
        if node in self.final_nodes:
            shown = text.replace(current, "")
            shown_expected = "expected output is" in _flat(shown)
            if shown_expected and node in self._holding:  # no one to hand steps to: it holds them
                needs = " ".join(_ASK + self.needed(q) for q in self._by_length if q and q in shown)
                current = self._hold(current, self._asks(needs)) if needs else current
            if shown_expected and _flat(VERIFY).rstrip(".") not in _flat(current):
                return f"{current} {VERIFY}".strip()
            return current
        shown = text.replace(current, "")
        asks = self._asks(shown)
        if not asks and _flat(_KEEP) not in _flat(shown):  # no feedback at all: it can only rephrase
            held = self._shown_skills(current)
            base = self._without_skills(current, held)
            reworded = base if _REPHRASE in base else f"{base} {_REPHRASE}"
            return " ".join([reworded, *held]).strip()
        if not asks:  # told to keep it
            return current
        return self._hold(current, asks)

    def _without_skills(self, current: str, held: list[str]) -> str:
        base = current
        for skill in held:
            base = re.sub(re.escape(skill), "", base, flags=re.I)
        return " ".join(base.split())

    def _hold(self, current: str, asks: list[str]) -> str:
        """`current` with the `asks` added, keeping at most `CAPACITY` steps (the oldest dropped)."""
        held = self._shown_skills(current)
        kept = [s for s in held if s not in asks] + asks
        kept = kept[-CAPACITY:]
        return " ".join([self._without_skills(current, held), *kept]).strip()

    def _reflect(self, name: str, prompt: str) -> str:
        """GEPA's reflection on component `name`: its text and, per example, what it read, what it wrote and the
        feedback on the *system's* answer. An answering node is rewritten as any rewrite of it is. Any other node
        reads the questions it was given beside the expected answers the system missed, so it knows the steps
        those questions need and adds them, most needed first (dropping its oldest beyond capacity) -- but it
        sees neither its siblings nor which node's omission made the answer wrong, so every hint asked about
        the same failures adds the same steps."""
        current = parse_tagged(prompt, ["current"]).value_or("")
        if name.removesuffix(".instruction") in self.final_nodes:
            return self._improve(name, current, prompt)
        blocks = re.findall(r"<example (\d+)>\n(.*?)\n</example \1>", prompt, re.DOTALL)
        failing = [block for _, block in blocks if "expected output is" in _flat(block)]
        needs = [self.needed(q) for q in (self._question(block) for block in failing) if q is not None]
        asks = self._asks(" ".join(_ASK + need for need in needs))
        return self._hold(current, asks) if asks else current

    def _copro_candidate(self, name: str, prompt: str, index: int) -> str:
        """COPRO's `index`-th candidate for `name` (shown the current instruction or the attempts, never
        the questions): a guessed skill added (a hint) or, every other candidate, `VERIFY` (a final node)."""
        current = parse_tagged(prompt, ["current"]).value_or("")
        tried = re.findall(r"(?m)^Instruction: (.*)$", prompt)
        base = current or (tried[-1] if tried else "")
        if name.removesuffix(".instruction") in self.final_nodes:
            if not index % 2 and name.removesuffix(".instruction") in self._holding:
                guess = self.skills[_digest(f"candidate:{self.seed}:{name}:{base}:{index}") % len(self.skills)]
                return self._hold(base, [guess])
            return self._improve(name, base, "expected output is" if index % 2 else "")
        guess = self.skills[_digest(f"candidate:{self.seed}:{name}:{base}:{index}") % len(self.skills)]
        return self._improve(name, base, _ASK + guess)

    def _rewrite_each(self, request: LLMRequest) -> str:
        """A reply with one value per target (named blocks).

        OptoPrime's variables (each shown in a ``<variable name=...>`` block beside the whole
        execution): the questions shown give the missing skills, as a backward call that sees
        them does; each goes to the hint whose instruction holds the fewest skills, the other
        hints keep theirs, and a final node is rewritten as usual. COPRO's candidates (shown
        the current instruction or the attempts, never the questions): each candidate adds a
        guessed skill (a hint) or, every other candidate, `VERIFY` (a final node).
        """
        text = self._text(request)
        name = request.node or ""
        if all(t.startswith("candidate ") for t in request.targets):
            values = {t: self._copro_candidate(name, request.prompt, i) for i, t in enumerate(request.targets)}
            return format_named("improved", values)
        current = {}
        for target in request.targets:
            shown = re.search(rf'<variable name="{re.escape(target)}">\n?(.*?)\n?</variable>', text, re.DOTALL)
            current[target] = shown.group(1).strip() if shown else ""
        hints = [t for t in request.targets if t.removesuffix(".instruction") not in self.final_nodes]
        load = {t: len(self._shown_skills(current[t])) for t in hints}
        asked: dict[str, list[str]] = {t: [] for t in hints}
        needs = list(dict.fromkeys(self.needed(q) for q in self._by_length if q and q in text))
        for need in needs:
            if hints and not any(need in self._shown_skills(current[t]) for t in hints):
                chosen = min(hints, key=lambda t: (load[t] + len(asked[t]), hints.index(t)))
                asked[chosen].append(need)
        values = {}
        for target in request.targets:
            if target in asked:
                told = " ".join(_ASK + s for s in asked[target]) or _KEEP
                values[target] = self._improve(target, current[target], told)
            else:
                values[target] = self._improve(target, current[target], text)
        return format_named("improved", values)


def _answering(graph: Graph) -> tuple[str, ...]:
    """The LLM nodes whose reply is the system's answer: the output, or those feeding it through function nodes."""
    found: list[str] = []
    todo = [graph.output]
    while todo:
        name = todo.pop(0)
        node = graph[name]
        if node.kind == "llm" and name not in found:
            found.append(name)
        elif node.kind == "function":
            todo.extend(node.inputs)
    return tuple(sorted(found, key=graph.position))


def _restating(graph: Graph, answering: tuple[str, ...]) -> tuple[str, ...]:
    """The notes-writing nodes with a successor that does not read the item (the graph's first input)."""
    if not graph.inputs:
        return ()
    item = graph.inputs[0]
    return tuple(
        name
        for name in graph.of_kind("llm")
        if name not in answering and any(item not in graph[s].inputs for s in graph.successors(name))
    )


def _holding(graph: Graph, answering: tuple[str, ...]) -> tuple[str, ...]:
    """The answering nodes that read no other LLM node (directly or through other nodes): they hold steps."""
    return tuple(a for a in answering if not any(graph[n].kind == "llm" for n in graph.ancestors(a)))
