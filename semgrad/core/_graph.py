"""Graphs: the structure of an agentic system, separate from its trainable values.

A graph has four kinds of node:

* ``input``: a per-sample field such as the question;
* ``param``: a free trainable text variable (a solution, a shared system prompt)
  that feeds nodes like an input and is rewritten from its gradients;
* ``llm``: a computed node whose value one LLM call produces from its
  instruction (the trainable parameter ``"<name>.instruction"``) and its inputs;
* ``function``: a computed node whose value a plain Python function produces
  (a join, a parser, or an elementary numeric function);
* ``tool``: a computed node recorded from a system written as Python
  (``ctx.tool(...)``): an effect the core never runs, described by its
  ``description`` (or, trainable on request, the parameter ``"<name>.description"``)
  and its ``arguments`` (the tool's keyword per input).

A system written as Python may call one LLM component several times in one run (a
loop): each call is an *occurrence*, a node named ``"act#1"``, ``"act#2"``, ...
(`occurrence_name`) whose ``occurrence_of`` is ``"act"``; all of them share the one
instruction parameter ``"act.instruction"``.

`Graph` holds structure only; `Params` holds the trainable values, so an
optimizer never touches structure.
"""

from __future__ import annotations

import hashlib
import heapq
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from ._errors import GraphError
from ._frozen import FrozenMap, to_frozen_map

__all__ = [
    "Graph",
    "GraphBuilder",
    "Node",
    "NodeKind",
    "Parameter",
    "Params",
    "description_name",
    "instruction_name",
    "occurrence_name",
]

NodeKind = Literal["input", "param", "llm", "function", "tool"]


#: Characters a name may not hold: a backward reply labels each target's feedback with its
#: name between quotes (``<feedback input="name">``), and the parsers end a label at the first
#: quote or angle bracket. Control characters (a newline, a tab) and whitespace around the name
#: are refused too, as the parsers strip the label; and as they read it in any case, two names
#: may not be equal ignoring case (``str.casefold``).
FORBIDDEN_IN_NAMES = "\"'<>"


def _name_problem(name: str) -> str:
    """Why `name` cannot label a backward reply's feedback, or "" when it can."""
    bad = sorted({c for c in name if c in FORBIDDEN_IN_NAMES or unicodedata.category(c) == "Cc"})
    if bad:
        return (
            f"contains {' '.join(map(repr, bad))}: names may not contain quotes, '<', '>' or control characters,"
            " which break the label a backward reply gives the node's feedback"
        )
    if name != name.strip():
        return "starts or ends with whitespace, which backward replies do not keep around a label"
    return ""


#: The characters a role escapes in a fingerprint's text (see `_escaped`).
_ROLE_SPECIAL = "\\\n"


def _escaped(field: str, special: str = "\\,|\n") -> str:
    r"""`field` as a part of a graph's fingerprint text, which writes a line ``name|kind|inputs|role`` per
    node (inputs joined by ``,``) under the output's name. When the field holds a `special` character (a
    separator, or the backslash), each is escaped with a backslash, so two graphs never write the same
    text; a role, the last field of its line, escapes only the backslash and the line's end
    (`_ROLE_SPECIAL`). A field without any is written as it is, so the fingerprints of graphs whose
    fields hold none are unchanged.

    Examples:
        >>> print(_escaped("hint_1"), _escaped("a,b"), _escaped("a|b\\"), _escaped("Yes, or no", _ROLE_SPECIAL))
        hint_1 a\,b a\|b\\ Yes, or no
    """
    if not any(c in field for c in special):
        return field
    for c in special:  # the backslash first
        field = field.replace(c, "\\" + ("n" if c == "\n" else c))
    return field


def instruction_name(node: str) -> str:
    """The name of an LLM node's instruction parameter.

    Examples:
        >>> instruction_name("answer")
        'answer.instruction'
    """
    return f"{node}.instruction"


def description_name(node: str) -> str:
    """The name of a tool node's description parameter, when its description is trainable.

    Examples:
        >>> description_name("lookup")
        'lookup.description'
    """
    return f"{node}.description"


def occurrence_name(component: str, k: int) -> str:
    """The node name of the `k`-th call (from 1) of one LLM component in one recorded run.

    Examples:
        >>> occurrence_name("act", 2)
        'act#2'
    """
    if type(k) is not int or k < 1:
        raise ValueError(f"occurrences are counted from 1, got {k!r}")
    return f"{component}#{k}"


@attrs.frozen
class Node:
    """One node of a graph (structure only; parameter values live in `Params`).

    Attributes:
        name: Unique name.
        kind: "input", "param", "llm" or "function".
        inputs: Names of the predecessors, in the order prompts show them.
        role: A short description of what the value is, shown in prompts.
        fn: For a function node, ``fn(*input_values) -> value``.
        vjp: For a function node used with `rules.numeric()`,
            ``vjp(input_values, output_value, output_gradient) -> tuple`` of
            one gradient per input.
        output_format: For an LLM node, fixed text on the form of its output,
            shown in its forward prompt after the instruction and never trained
            (LIAR's "at most two sentences", "Yes or No"); "" for none.
        reason: For an LLM node, whether its forward prompt asks it to think
            step by step before its result (the default).
        occurrence_of: For an LLM node that is one call of a component called several
            times in a run (``"act#2"``), the component's name (``"act"``), whose
            instruction parameter it shares; "" for a node that is its own component.
        description: For a tool node, what the tool does (its docstring, or the text the
            user gave), fixed; "" when the description is trainable (it is then the
            parameter `description_parameter` names) or there is none.
        arguments: For a tool node, the tool's keyword argument fed by each input, in
            the order of `inputs`.
        description_trainable: For a tool node, whether its description is the trainable
            parameter ``"<name>.description"`` rather than the fixed `description`.
    """

    name: str
    kind: NodeKind
    inputs: tuple[str, ...] = ()
    role: str = ""
    fn: Callable[..., Any] | None = attrs.field(default=None, eq=False, repr=False)
    vjp: Callable[..., tuple[Any, ...]] | None = attrs.field(default=None, eq=False, repr=False)
    output_format: str = ""
    reason: bool = True
    occurrence_of: str = ""
    description: str = ""
    arguments: tuple[str, ...] = ()
    description_trainable: bool = False

    @property
    def instruction(self) -> str | None:
        """The instruction parameter's name for an LLM node (an occurrence's is its component's), else None.

        Examples:
            >>> Node("act#2", "llm", ("q",), occurrence_of="act").instruction
            'act.instruction'
        """
        if self.kind != "llm":
            return None
        return instruction_name(self.occurrence_of or self.name)

    @property
    def component(self) -> str:
        """The component a node is a call of: `occurrence_of` for an occurrence, else its own name."""
        return self.occurrence_of or self.name

    @property
    def description_parameter(self) -> str | None:
        """The name of a tool node's trainable description parameter, else None."""
        return description_name(self.component) if self.kind == "tool" and self.description_trainable else None

    @property
    def computed(self) -> bool:
        """True for nodes whose value is computed from inputs (llm, function, tool)."""
        return self.kind in ("llm", "function", "tool")


@attrs.frozen
class Parameter:
    """A trainable text value.

    Attributes:
        name: ``"<node>.instruction"`` for instructions, the given name for free ones.
        value: The current text.
        role: What the text is, shown in prompts (e.g. "instruction of node 'answer'").
        trainable: Whether optimizers may change it and backward sends it gradients.
        node: For an instruction, the LLM node (or, for a component called several times
            in a recorded run, the component ``"act"`` whose occurrences share it) it
            belongs to; for a tool's trainable description, the tool node; None for free
            parameters.
    """

    name: str
    value: Any
    role: str
    trainable: bool = True
    node: str | None = None

    @property
    def is_instruction(self) -> bool:
        """True when this is an LLM component's instruction (not a tool's description)."""
        return self.node is not None and self.name == instruction_name(self.node)


@attrs.frozen
class Params(Mapping[str, Parameter]):
    """The trainable values of a graph: an ordered, immutable mapping name -> `Parameter`.

    Examples:
        >>> b = GraphBuilder()
        >>> q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Answer.")
        >>> _, params = b.build(output="answer")
        >>> params.value("answer.instruction")
        'Answer.'
        >>> params.with_values({"answer.instruction": "Answer briefly."}).texts()
        FrozenMap({'answer.instruction': 'Answer briefly.'})
    """

    items_: FrozenMap[str, Parameter] = attrs.field(converter=to_frozen_map, alias="items", repr=False)
    # Values derived from these (immutable) params and reused across samples, filled
    # lazily by the engines and never compared, hashed or saved: one dict per engine
    # ("forward_system": node -> system message; "forward_start": graph fingerprint ->
    # start cells; "backward": (fingerprint, include_instructions) -> plan tables;
    # "neighbor_aware": (fingerprint, node, targets) -> prompt parts). A params value may serve
    # several graphs, so whatever depends on the structure is keyed by its fingerprint.
    _memo: dict[Any, Any] = attrs.field(init=False, factory=dict, eq=False, hash=False, repr=False)

    def __repr__(self) -> str:
        """``Params(items=...)``, in the constructor's own words (``eval`` of it gives equal params)."""
        return f"Params(items={self.items_!r})"

    # Pickling (a sweep's worker, a process pool) and copying keep the values, not the memo.
    def __getstate__(self) -> dict[str, Any]:
        return {"items_": self.items_}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "items_", state["items_"])
        object.__setattr__(self, "_memo", {})

    def __getitem__(self, name: str) -> Parameter:
        try:
            return self.items_[name]
        except KeyError:
            raise KeyError(f"no parameter named {name!r}; known: {', '.join(self.items_) or 'none'}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def memo(self, kind: str) -> dict[Any, Any]:
        """The params' memo for one kind of derived value (an empty dict the first time).

        What the engines derive from these immutable params and reuse across samples --
        rendered system messages, start cells, backward plans, prompt parts -- is kept
        here, one dict per kind, keyed by whatever it depends on besides the params (a
        graph's fingerprint, a node). It is never compared, hashed, pickled or copied.

        Examples:
            >>> b = GraphBuilder(); q = b.input("q"); _ = b.llm("a", inputs=[q], instruction="Solve.")
            >>> _, params = b.build(output="a")
            >>> params.memo("mine")["x"] = 1
            >>> params.memo("mine"), params.with_values({}).memo("mine")
            ({'x': 1}, {})
        """
        found = self._memo.get(kind)
        if found is None:
            found = self._memo[kind] = {}
        return found  # type: ignore[no-any-return]

    def value(self, name: str) -> Any:
        """The current value of parameter `name`."""
        return self[name].value

    def texts(self) -> FrozenMap[str, Any]:
        """All values by name, in order."""
        return FrozenMap((name, p.value) for name, p in self.items_.items())

    def trainable(self) -> tuple[str, ...]:
        """Names of the trainable parameters, in order."""
        return tuple(name for name, p in self.items_.items() if p.trainable)

    @property
    def digest(self) -> str:
        """A short digest of the values, by name (computed once per params): a `Trace` keeps
        the digest of the params that made it, and `backward` checks it.

        Examples:
            >>> b = GraphBuilder(); q = b.input("q"); _ = b.llm("a", inputs=[q], instruction="Solve.")
            >>> _, params = b.build(output="a")
            >>> params.digest == params.with_values({}).digest != params.with_values({"a.instruction": "X"}).digest
            True
        """
        found = self._memo.get("digest")
        if found is None:
            blob = repr(tuple((name, type(p.value).__name__, p.value) for name, p in self.items_.items()))
            found = self._memo["digest"] = hashlib.sha256(blob.encode("utf-8", "replace")).hexdigest()[:16]
        return found

    def with_values(self, values: Mapping[str, Any]) -> Params:
        """A copy with some values replaced; unknown names raise `KeyError`."""
        items = self.items_
        for name, value in values.items():
            items = items.set(name, attrs.evolve(self[name], value=value))
        return Params(items)


@attrs.frozen
class Graph:
    """The validated structure of an agentic system. Build one with `GraphBuilder`.

    Nodes are kept in a deterministic topological order (ties broken by the order
    they were added), and every query returns names in that order.
    """

    nodes: FrozenMap[str, Node] = attrs.field(converter=to_frozen_map)
    output: str
    _index: FrozenMap[str, int] = attrs.field(init=False, eq=False, repr=False)
    _successors: FrozenMap[str, tuple[str, ...]] = attrs.field(init=False, eq=False, repr=False)
    _to_output: frozenset[str] = attrs.field(init=False, eq=False, repr=False)
    _order: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    _fingerprint: str = attrs.field(init=False, eq=False, repr=False)
    _inputs: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    #: Positions of each node's inputs and successors, and each node's role, by position, for the engines.
    input_positions: tuple[tuple[int, ...], ...] = attrs.field(init=False, eq=False, repr=False)
    successor_positions: tuple[tuple[int, ...], ...] = attrs.field(init=False, eq=False, repr=False)
    roles: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    #: Each node's forward token, ``(name,)``, by position: made once, not per request.
    _tokens: tuple[tuple[str], ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        index = {name: i for i, name in enumerate(self.nodes)}
        succ: dict[str, list[str]] = {name: [] for name in self.nodes}
        for node in self.nodes.values():
            for parent in node.inputs:
                succ[parent].append(node.name)
        object.__setattr__(self, "_index", FrozenMap(index))
        object.__setattr__(self, "_order", tuple(self.nodes))
        object.__setattr__(self, "_tokens", tuple((name,) for name in self.nodes))
        object.__setattr__(self, "_inputs", tuple(n for n, node in self.nodes.items() if node.kind == "input"))
        parts = [_escaped(self.output)] + [
            f"{_escaped(n.name)}|{n.kind}|{','.join(map(_escaped, n.inputs))}|{_escaped(n.role, _ROLE_SPECIAL)}"
            + _prompt_fixed(n)
            for n in self.nodes.values()
        ]
        object.__setattr__(self, "_fingerprint", hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16])
        object.__setattr__(self, "_successors", FrozenMap((k, tuple(v)) for k, v in succ.items()))
        reach = {self.output}
        for name in reversed(tuple(self.nodes)):
            if name in reach:
                reach.update(self.nodes[name].inputs)
        object.__setattr__(self, "_to_output", frozenset(reach))
        object.__setattr__(
            self, "input_positions", tuple(tuple(index[p] for p in n.inputs) for n in self.nodes.values())
        )
        object.__setattr__(self, "roles", tuple(n.role for n in self.nodes.values()))
        object.__setattr__(
            self, "successor_positions", tuple(tuple(index[s] for s in succ[name]) for name in self.nodes)
        )

    def __getitem__(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise GraphError(f"no node named {name!r} in this graph") from None

    @property
    def topological_order(self) -> tuple[str, ...]:
        """All node names, every node after all of its inputs."""
        return self._order

    def position(self, name: str) -> int:
        """The node's index in `topological_order`."""
        return self._index[name]

    def predecessors(self, name: str) -> tuple[str, ...]:
        """The node's inputs, in the order it lists them."""
        return self[name].inputs

    def successors(self, name: str) -> tuple[str, ...]:
        """The nodes that read `name`, in topological order."""
        self[name]
        return self._successors[name]

    def siblings(self, node: str, of: str) -> tuple[str, ...]:
        """The other inputs of `node` beside its input `of`.

        Examples:
            >>> b = GraphBuilder(); q = b.input("q")
            >>> _ = b.llm("a", inputs=[q], instruction="x"); _ = b.llm("c", inputs=[q, "a"], instruction="y")
            >>> b.build(output="c")[0].siblings("c", of="a")
            ('q',)
        """
        inputs = self[node].inputs
        if of not in inputs:
            raise GraphError(f"{of!r} is not an input of node {node!r}")
        return tuple(name for name in inputs if name != of)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """Every node `name` depends on, in topological order."""
        seen = set(self[name].inputs)
        for other in reversed(tuple(self.nodes)[: self._index[name]]):
            if other in seen:
                seen.update(self.nodes[other].inputs)
        return tuple(n for n in self.nodes if n in seen)

    def reaches_output(self, name: str) -> bool:
        """True if `name` is the output or one of its ancestors."""
        return name in self._to_output

    def of_kind(self, kind: NodeKind) -> tuple[str, ...]:
        """Names of the nodes of one kind, in topological order."""
        return tuple(name for name, node in self.nodes.items() if node.kind == kind)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the input nodes (the per-sample fields), in order."""
        return self._inputs

    @property
    def fingerprint(self) -> str:
        """A short digest of the structure (names, kinds, edges, roles, output)."""
        return self._fingerprint


def _prompt_fixed(node: Node) -> str:
    """A node's fixed prompt text for the fingerprint: "" when it has none (so older fingerprints hold)."""
    fixed = f"|format:{_escaped(node.output_format, _ROLE_SPECIAL)}" if node.output_format else ""
    if node.occurrence_of:
        fixed += f"|of:{_escaped(node.occurrence_of, _ROLE_SPECIAL)}"
    if node.kind == "tool":  # a kind older graphs never had: their fingerprints are unchanged
        fixed += f"|arguments:{','.join(map(_escaped, node.arguments))}"
        fixed += "|description:" + (
            "trainable" if node.description_trainable else _escaped(node.description, _ROLE_SPECIAL)
        )
    return fixed + ("" if node.reason else "|direct")


class GraphBuilder:
    """Builds a `Graph` and its `Params` step by step; `build` validates everything.

    Each ``add`` method returns the new node's name, which later nodes take as
    an input. Inputs may name nodes added later; `build` checks they all exist
    and that there is no cycle.

    Examples:
        >>> b = GraphBuilder()
        >>> q = b.input("question")
        >>> h1 = b.llm("hint_1", inputs=[q], instruction="Work out an intermediate step.")
        >>> h2 = b.llm("hint_2", inputs=[q], instruction="Work out an intermediate step.")
        >>> _ = b.llm("answer", inputs=[q, h1, h2], instruction="Solve the problem.")
        >>> graph, params = b.build(output="answer")
        >>> graph.topological_order
        ('question', 'hint_1', 'hint_2', 'answer')
        >>> list(params)
        ['hint_1.instruction', 'hint_2.instruction', 'answer.instruction']
        >>> b2 = GraphBuilder(); _ = b2.llm("a", inputs=["b"], instruction="x")
        >>> _ = b2.llm("b", inputs=["a"], instruction="y")
        >>> b2.build(output="b")
        Traceback (most recent call last):
        ...
        semgrad.core._errors.GraphError: cycle through node 'a': a -> b -> a
    """

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._params: dict[str, Parameter] = {}
        self._folded: dict[str, str] = {}  # every name taken (nodes, parameters), by its casefold

    def input(self, name: str, *, role: str = "") -> str:
        """Add a per-sample input field (e.g. the question)."""
        return self._add(Node(name, "input", (), role or f"the input '{name}'"))

    def param(self, name: str, value: Any, *, role: str = "", trainable: bool = True) -> str:
        """Add a free trainable variable that feeds nodes like an input.

        It is named `name` in `Params`, receives partial gradients from every
        node that reads it, and is rewritten from them. Its value is text (a
        solution, a prompt), or a number for `rules.numeric()` graphs.
        """
        if value is None:
            raise GraphError(f"parameter {name!r} needs a value")
        role = role or f"the variable '{name}'"
        self._add(Node(name, "param", (), role))
        self._params[name] = Parameter(name, value, role, trainable)
        return name

    def llm(
        self,
        name: str,
        *,
        inputs: Sequence[str],
        instruction: str,
        role: str = "",
        trainable: bool = True,
        output_format: str = "",
        reason: bool = True,
        occurrence_of: str = "",
    ) -> str:
        """Add a node computed by one LLM call from `instruction` and `inputs`.

        Its instruction becomes the parameter ``f"{name}.instruction"``. `output_format`
        is fixed text on the form of its output, shown after the instruction and never
        trained; with `reason` False its prompt does not ask it to think step by step.

        With `occurrence_of`, the node is one call of a component called several times in a
        run (``b.llm("act#2", occurrence_of="act", ...)``): every occurrence shares the
        parameter ``"act.instruction"``, made by the first one added; the later ones must
        give the same instruction and `trainable`.

        Examples:
            >>> b = GraphBuilder(); q = b.input("q")
            >>> _ = b.llm("act#1", inputs=[q], instruction="Act.", occurrence_of="act")
            >>> _ = b.llm("act#2", inputs=["act#1"], instruction="Act.", occurrence_of="act")
            >>> graph, params = b.build(output="act#2")
            >>> list(params), graph["act#2"].instruction
            (['act.instruction'], 'act.instruction')
        """
        if not isinstance(instruction, str) or not instruction.strip():
            raise GraphError(f"node {name!r} needs a non-empty instruction")
        node = Node(
            name,
            "llm",
            self._inputs(name, inputs),
            role or f"the output of component '{name}'",
            output_format=output_format,
            reason=reason,
            occurrence_of=occurrence_of,
        )
        if occurrence_of:
            return self._occurrence(node, instruction, trainable)
        pname = instruction_name(name)
        if pname in self._nodes or pname in self._params:  # checked first: a refused node leaves the builder as it was
            raise GraphError(f"name {pname!r} is already taken, so node {name!r} cannot own it")
        self._check_name(name)
        other = self._folded.get(pname.casefold())
        if other is not None:
            raise GraphError(
                f"node {name!r}: its instruction {pname!r} collides with {other!r} ignoring case,"
                " and replies may name parameters in any case"
            )
        self._add(node)
        self._folded[pname.casefold()] = pname
        self._params[pname] = Parameter(pname, instruction, f"the instruction of component '{name}'", trainable, name)
        return name

    def _occurrence(self, node: Node, instruction: str, trainable: bool) -> str:
        """Add an occurrence of a component, sharing (or, for the first one, making) its instruction."""
        component = node.occurrence_of
        if not isinstance(component, str) or _name_problem(component) or component == node.name:
            raise GraphError(f"node {node.name!r}: occurrence_of must name another component, got {component!r}")
        pname = instruction_name(component)
        shared = self._params.get(pname)
        if shared is not None:
            if shared.node != component:
                raise GraphError(f"node {node.name!r}: {pname!r} is not the instruction of component {component!r}")
            if (shared.value, shared.trainable) != (instruction, trainable):
                raise GraphError(
                    f"node {node.name!r}: every occurrence of component {component!r} shares one instruction,"
                    f" and this one gives another instruction or trainable flag than {pname!r} holds"
                )
            return self._add(node)
        if pname in self._nodes or component in self._nodes:
            raise GraphError(f"name {pname!r} is already taken, so component {component!r} cannot own it")
        other = self._folded.get(pname.casefold())
        if other is not None:
            raise GraphError(
                f"component {component!r}: its instruction {pname!r} collides with {other!r} ignoring case"
            )
        self._add(node)
        self._folded[pname.casefold()] = pname
        role = f"the instruction of component '{component}'"
        self._params[pname] = Parameter(pname, instruction, role, trainable, component)
        return node.name

    def tool(
        self,
        name: str,
        *,
        inputs: Sequence[str],
        arguments: Sequence[str] | None = None,
        description: str = "",
        trainable_description: bool = False,
        role: str = "",
        occurrence_of: str = "",
    ) -> str:
        """Add a tool node: an effect recorded from a system written as Python, which the core never runs.

        `arguments` names the tool's keyword fed by each input (default: the inputs' names).
        With `trainable_description`, the description is the parameter ``f"{name}.description"``
        (starting from `description`), which backward may send gradients to; otherwise it is
        fixed text on the node. With `occurrence_of`, the node is one call of a tool called
        several times in a run (``"lookup#2"`` of ``"lookup"``), and a trainable description
        is the one parameter ``"lookup.description"`` all its calls share.

        Examples:
            >>> b = GraphBuilder(); q = b.input("q")
            >>> _ = b.tool("lookup", inputs=[q], arguments=["query"], description="Find an invoice.")
            >>> graph, params = b.build(output="lookup")
            >>> graph["lookup"].arguments, graph["lookup"].description, len(params)
            (('query',), 'Find an invoice.', 0)
        """
        inputs = self._inputs(name, inputs)
        names = tuple(inputs if arguments is None else arguments)
        if isinstance(arguments, str) or len(names) != len(inputs) or not all(isinstance(a, str) for a in names):
            raise GraphError(f"tool {name!r}: arguments must name one keyword per input, got {arguments!r}")
        if len(set(names)) != len(names):
            raise GraphError(f"tool {name!r}: arguments name a keyword more than once: {names!r}")
        if not isinstance(description, str):
            raise GraphError(f"tool {name!r}: description must be text, got {type(description).__name__}")
        role = role or f"the result of tool '{name}'"
        if occurrence_of and (
            not isinstance(occurrence_of, str) or _name_problem(occurrence_of) or occurrence_of == name
        ):
            raise GraphError(f"tool {name!r}: occurrence_of must name another tool, got {occurrence_of!r}")
        if not trainable_description:
            node = Node(
                name, "tool", inputs, role, description=description, arguments=names, occurrence_of=occurrence_of
            )
            return self._add(node)
        component = occurrence_of or name
        pname = description_name(component)
        shared = self._params.get(pname)
        node = Node(
            name, "tool", inputs, role, arguments=names, description_trainable=True, occurrence_of=occurrence_of
        )
        if shared is not None and occurrence_of and shared.node == component:
            if shared.value != description:
                raise GraphError(f"tool {name!r}: every call of tool {component!r} shares one description")
            return self._add(node)
        if pname in self._nodes or pname in self._params or pname.casefold() in self._folded:
            raise GraphError(f"name {pname!r} is already taken, so tool {name!r} cannot own it")
        self._add(node)
        self._folded[pname.casefold()] = pname
        self._params[pname] = Parameter(pname, description, f"the description of tool '{component}'", True, component)
        return name

    def function(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        inputs: Sequence[str],
        role: str = "",
        vjp: Callable[..., tuple[Any, ...]] | None = None,
    ) -> str:
        """Add a node computed by a plain function: ``fn(*input_values)``."""
        if not callable(fn):
            raise GraphError(f"node {name!r} needs a callable, got {type(fn).__name__}")
        node = Node(name, "function", self._inputs(name, inputs), role or f"the output of function '{name}'", fn, vjp)
        return self._add(node)

    def build(self, *, output: str) -> tuple[Graph, Params]:
        """Validate and return ``(graph, params)``; raise `GraphError` naming the culprit."""
        if output not in self._nodes:
            raise GraphError(f"output {output!r} is not a node; known nodes: {', '.join(self._nodes) or 'none'}")
        for node in self._nodes.values():
            for parent in node.inputs:
                if parent not in self._nodes:
                    raise GraphError(f"node {node.name!r} reads unknown input {parent!r}")
        order = self._toposort()
        graph = Graph(FrozenMap((name, self._nodes[name]) for name in order), output)
        sources = [a for a in (*graph.ancestors(output), output) if graph[a].kind in ("input", "param")]
        if not sources:
            raise GraphError(f"output {output!r} is not reachable from any input or parameter")
        return graph, Params(FrozenMap(self._params))

    def _add(self, node: Node) -> str:
        self._check_name(node.name)
        self._nodes[node.name] = node
        self._folded[node.name.casefold()] = node.name
        return node.name

    def _check_name(self, name: str) -> None:
        """Refuse a name that is not a non-empty string, is taken (in any case), or cannot label a reply."""
        if not isinstance(name, str) or not name:
            raise GraphError(f"node names must be non-empty strings, got {name!r}")
        if name in self._nodes or name in self._params:
            raise GraphError(f"duplicate name {name!r}")
        problem = _name_problem(name)
        if problem:
            raise GraphError(f"node name {name!r} {problem}")
        other = self._folded.get(name.casefold())
        if other is not None:
            raise GraphError(
                f"node name {name!r} collides with {other!r} ignoring case,"
                " and backward replies may name nodes in any case"
            )

    @staticmethod
    def _inputs(name: str, inputs: Sequence[str]) -> tuple[str, ...]:
        if isinstance(inputs, str):
            raise GraphError(f"node {name!r}: inputs must be a list of names, not the string {inputs!r}")
        result = tuple(inputs)
        if name in result:
            raise GraphError(f"node {name!r} lists itself as an input")
        duplicates = sorted({n for n in result if result.count(n) > 1})
        if duplicates:
            raise GraphError(f"node {name!r} lists input {duplicates[0]!r} more than once")
        return result

    def _toposort(self) -> list[str]:
        rank = {name: i for i, name in enumerate(self._nodes)}
        missing = {name: len(node.inputs) for name, node in self._nodes.items()}
        readers: dict[str, list[str]] = {name: [] for name in self._nodes}
        for node in self._nodes.values():
            for parent in node.inputs:
                readers[parent].append(node.name)
        heap = [rank[n] for n, count in missing.items() if count == 0]
        heapq.heapify(heap)
        names = list(self._nodes)
        order: list[str] = []
        while heap:
            name = names[heapq.heappop(heap)]
            order.append(name)
            for reader in readers[name]:
                missing[reader] -= 1
                if missing[reader] == 0:
                    heapq.heappush(heap, rank[reader])
        if len(order) < len(names):
            raise GraphError(self._cycle_message({n for n in names if missing[n] > 0}))
        return order

    def _cycle_message(self, stuck: set[str]) -> str:
        start = min(stuck, key=list(self._nodes).index)
        path, seen, current = [start], {start}, start
        while True:
            current = next(p for p in self._nodes[current].inputs if p in stuck)
            if current in seen:
                cycle = path[path.index(current) :] + [current]
                cycle.reverse()
                first = min(cycle[:-1], key=list(self._nodes).index)
                i = cycle.index(first)
                ordered = cycle[i:-1] + cycle[:i] + [first]
                return f"cycle through node {first!r}: {' -> '.join(ordered)}"
            path.append(current)
            seen.add(current)


#: The values of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (Parameter, Params)
