"""LIAR: reading all three TSV files (stray quotes included), labels, fields and splits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.tasks import DataError, liar_examples, load_liar, load_samples, split_liar
from semgrad.topologies import LIAR_FIELDS, liar_graph

FILES = ("train", "valid", "test")


def raw_rows(path):
    """The file's rows split on tabs by hand, with no quoting rules at all."""
    return [line.split("\t") for line in path.read_text("utf-8").split("\n") if line]


@pytest.mark.parametrize("file", FILES)
def test_every_true_or_false_row_is_read_including_stray_quotes(data_dir, file):
    """Each row labelled false or true becomes one example; rows with stray quotes are not merged or lost."""
    rows = [r for r in raw_rows(data_dir / "liar" / f"{file}.tsv") if r[1] in ("false", "true")]
    examples = load_liar(data_dir, file, drop_incomplete=False)
    assert [e.id for e in examples] == [f"liar/{file}/{r[0].removesuffix('.json')}" for r in rows]
    assert [e.inputs["statement"] for e in examples] == [r[2].strip() for r in rows]
    quoted = [e for e in examples if '"' in e.inputs["statement"]]
    assert quoted and len(quoted) == sum('"' in r[2] for r in rows)


def test_file_sizes_match_the_documented_counts(data_dir):
    """3,681 / 432 / 461 true-or-false rows; 2,343 / 276 / 296 once incomplete rows are dropped."""
    assert [len(load_liar(data_dir, f, drop_incomplete=False)) for f in FILES] == [3681, 432, 461]
    assert [len(load_liar(data_dir, f)) for f in FILES] == [2343, 276, 296]


def test_only_the_two_binary_labels_are_kept_as_yes_and_no(data_dir, liar_files):
    """Targets are Yes (label false: a lie) or No (label true), with the file's label counts."""
    rows = raw_rows(data_dir / "liar" / "train.tsv")
    labels = {r[0].removesuffix(".json"): r[1] for r in rows}
    for example in liar_files[0]:
        assert {"false": "Yes", "true": "No"}[labels[example.id.rsplit("/", 1)[1]]] == example.target
    examples = load_liar(data_dir, "train", drop_incomplete=False)
    assert sum(e.target == "Yes" for e in examples) == sum(r[1] == "false" for r in rows) == 1998
    assert sum(e.target == "No" for e in examples) == sum(r[1] == "true" for r in rows) == 1683


def test_inputs_are_the_five_fields_of_the_liar_graph(liar_files):
    """Every example's inputs are exactly the LIAR graph's input fields, none empty or 'none' after dropping."""
    graph, _ = liar_graph()
    for examples in liar_files:
        for e in examples:
            assert tuple(e.inputs) == LIAR_FIELDS == graph.inputs
            assert all(v.strip() and v.strip().lower() != "none" for v in e.inputs.values())


def test_source_is_the_context_column_and_fields_map_to_their_columns():
    """statement, job title, state, party and source come from columns 3, 6, 7, 8 and 14."""
    row = ["9.json", "true", "S", "subj", "speaker", "Job", "Texas", "republican", *"12345", "a debate"]
    (example,) = liar_examples(["\t".join(row)], "valid", "valid.tsv")
    assert dict(example.inputs) == {
        "statement": "S",
        "party": "republican",
        "job_title": "Job",
        "source": "a debate",
        "state": "Texas",
    }
    assert (example.id, example.target) == ("liar/valid/9", "No")


@pytest.mark.parametrize("empty", ["", "  ", "none", "None", "-"])
def test_incomplete_rows_are_dropped_only_when_asked(empty):
    """A row with an empty, letterless or 'none' field is dropped by default and kept with drop_incomplete=False."""
    row = ["1.json", "false", "S", "subj", "speaker", "Job", empty, "democrat", *"00000", "ctx"]
    line = "\t".join(row)
    assert liar_examples([line], "train", "t.tsv") == ()
    assert len(liar_examples([line], "train", "t.tsv", drop_incomplete=False)) == 1


def test_a_row_without_14_columns_names_its_line(tmp_path):
    """A row with the wrong number of columns is a one-line DataError with path and line number."""
    (tmp_path / "liar").mkdir()
    path = tmp_path / "liar" / "test.tsv"
    good = "\t".join(["1.json", "true", "S", "x", "y", "J", "Ohio", "d", *"00000", "c"])
    path.write_text(f"{good}\n{good}\nonly\tthree\tcolumns\n", "utf-8")
    with pytest.raises(DataError, match=r"test.tsv:3: expected 14 tab-separated columns, found 3"):
        load_liar(tmp_path, "test")


def test_liar_is_never_bundled():
    """There are no bundled LIAR items."""
    with pytest.raises(DataError, match="no bundled items for 'liar'"):
        load_samples("liar")


@given(st.integers(0, 2**32))
def test_liar_split_is_disjoint_and_follows_the_protocol(liar_files, seed):
    """50 train (train file), 50 validation (valid file), the whole test file; no shared ids."""
    s = split_liar(*liar_files, seed=seed)
    assert s.sizes == (50, 50, 296)
    parts = [{e.id for e in part} for part in (s.train, s.validation, s.test)]
    assert sum(map(len, parts)) == len(set().union(*parts))
    for part, file in zip((s.train, s.validation, s.test), FILES):
        assert all(e.id.startswith(f"liar/{file}/") for e in part)


@given(st.integers(0, 2**32), st.integers(0, 100))
def test_liar_split_is_deterministic(liar_files, seed, n_test):
    """The same seed and sizes give the same LIAR split."""
    assert split_liar(*liar_files, seed=seed, test=n_test) == split_liar(*liar_files, seed=seed, test=n_test)
