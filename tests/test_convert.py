"""`nlpipe convert`: every reader and writer on hand-written fixtures, error paths, corpus round trips."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from nlpipe.io.conllu import parse_string, to_string
from nlpipe.runtime.convert import bracket_column, convert, write_conll2005, write_text
from nlpipe.errors import InputError, NlpipeError

from conftest import FIXTURES, run_cli

CORP = FIXTURES / "corpora"


def _convert(src: str, dst: str, path: Path, tmp_path: Path) -> str:
    out = tmp_path / f"out.{dst}"
    convert(src, dst, str(path), str(out))
    return out.read_text(encoding="utf-8")


def test_conll2003_to_conllu(tmp_path):
    got = _convert("conll2003", "conllu", CORP / "sample.conll2003", tmp_path)
    assert got.split("\n\n")[1] == (
        "# newdoc\n# sent_id = 2\n# text = Hello Bob\n"
        "1\tHello\t_\t_\tUH\t_\t_\t_\t_\tChunk=I-INTJ\n"
        "2\tBob\t_\t_\tNNP\t_\t_\t_\t_\tChunk=I-NP|NE=B-PER")
    first = parse_string(got)[0]
    assert first.meta("newdoc") == "" and first.words[7][9] == "Chunk=I-NP|NE=B-LOC"


def test_conllu_to_conll2003_round_trip_in_bio(tmp_path):
    conllu = tmp_path / "a.conllu"
    convert("conll2003", "conllu", str(CORP / "sample.conll2003"), str(conllu))
    got = _convert("conllu", "conll2003", conllu, tmp_path)
    want = (CORP / "sample.conll2003").read_text()
    for iob1, bio in [("Anna NNP I-NP I-PER", "Anna NNP I-NP B-PER"), ("Berlin NNP I-NP I-ORG", "Berlin NNP I-NP B-ORG"),
                      ("Paris NNP I-NP I-LOC", "Paris NNP I-NP B-LOC"), ("Bob NNP I-NP I-PER", "Bob NNP I-NP B-PER")]:
        want = want.replace(iob1, bio)
    assert got == want + "\n"


def test_conllu_to_conll2003_defaults():
    sents = parse_string("# newdoc id = d\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\tNE=B-PER\n"
                         "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdo\tdo\tAUX\tVBP\t_\t1\taux\t_\t_\n"
                         "3\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_\n\n")
    from nlpipe.runtime.convert import write_conll2003

    out = io.StringIO()
    assert write_conll2003(sents, out) == 1
    assert out.getvalue() == "-DOCSTART- -X- -X- O\n\nHi INTJ O B-PER\ndo VBP O O\nn't RB O O\n\n"


def test_conll2012_to_conllu(tmp_path):
    got = _convert("conll2012", "conllu", CORP / "sample.gold_conll", tmp_path)
    second = got.split("\n\n")[1]
    assert second == "\n".join([
        "# sent_id = weblog-blog_one-1",
        "# text = They broke up the band and left .",
        "1\tThey\t_\t_\tPRP\t_\t_\t_\t_\tSRL=2:B-ARG0,7:B-ARG0",
        "2\tbroke\tbreak\t_\tVBD\t_\t_\t_\t_\tPred=break_up.08|SRL=2:B-V",
        "3\tup\t_\t_\tRP\t_\t_\t_\t_\tSRL=2:I-V",
        "4\tthe\t_\t_\tDT\t_\t_\t_\t_\tSRL=2:B-ARG1",
        "5\tband\t_\t_\tNN\t_\t_\t_\t_\tSRL=2:I-ARG1",
        "6\tand\t_\t_\tCC\t_\t_\t_\t_\t_",
        "7\tleft\tleave\t_\tVBD\t_\t_\t_\t_\tPred=leave.01",
        "8\t.\t_\t_\t.\t_\t_\t_\t_\t_"])
    assert got.startswith("# newdoc id = google/ewt/weblog/00/blog_one.xml\n# sent_id = weblog-blog_one-0\n")
    assert got.count("# newdoc id") == 2


def test_conll2012_to_conllu_to_conll2005_keeps_every_span(tmp_path):
    conllu = tmp_path / "a.conllu"
    convert("conll2012", "conllu", str(CORP / "sample.gold_conll"), str(conllu))
    assert _convert("conllu", "conllu", conllu, tmp_path) == conllu.read_text()
    props = _convert("conllu", "conll2005", conllu, tmp_path)
    # the source's lemma column (7) and predicate columns (9+) are exactly the CoNLL-2005 props
    source = (CORP / "sample.gold_conll").read_text().split("\n")
    want = "\n".join("\t".join([c[6]] + c[8:]) if c[0] else "" for c in (line.split("\t") for line in source))
    assert props == want + "\n"


def test_conll2005_from_misc_adds_implicit_v_and_pred_y():
    sents = parse_string("1\tgo\tgo\t_\t_\t_\t_\t_\t_\tPred=Y\n2\thome\t_\t_\t_\t_\t_\t_\t_\tSRL=1:B-ARGM-DIR\n"
                         "3\tnow\t_\t_\t_\t_\t_\t_\t_\t_\n\n1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    out = io.StringIO()
    assert write_conll2005(sents, out) == 2
    assert out.getvalue() == "go\t(V*)\n-\t(ARGM-DIR*)\n-\t*\n\n-\n\n"


def test_bracket_column_nesting():
    assert bracket_column([(0, 3, "A"), (1, 2, "B"), (3, 4, "C")], 4) == ["(A*", "(B*)", "*)", "(C*)"]


def test_conllu_to_text():
    sents = parse_string(
        "# newdoc id = d1\n# newpar id = p1\n# text = Hello there.\n1\tHello\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tthere.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
        "1\tNo\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\t,\t_\t_\t_\t_\t_\t_\t_\t_\n3\tok\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
        "# newpar\n1\tNew\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
        "# newdoc id = d2\n1\tEnd\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    out = io.StringIO()
    assert write_text(sents, out) == 4
    assert out.getvalue() == "Hello there.\nNo, ok\n\nNew\n\nEnd\n"


def test_text_to_conllu_uses_the_tokenizer(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("Mary sold the car. John bought it.\n", encoding="utf-8")
    got = parse_string(_convert("text", "conllu", text, tmp_path))
    assert [w for s in got for w in s.forms()] == ["Mary", "sold", "the", "car", ".", "John", "bought", "it", "."]


def test_conllu_pass_through_is_byte_identical(tmp_path):
    special = FIXTURES / "special.conllu"
    out = tmp_path / "out.conllu"
    convert("conllu", "conllu", str(special), str(out))
    assert out.read_bytes() == special.read_bytes()
    up = CORP / "sample-up.conllu"
    convert("conllu", "conllu", str(up), str(out))
    assert out.read_bytes() == up.read_bytes()


def test_unknown_format():
    with pytest.raises(NlpipeError, match="cannot write format 'xml'"):
        convert("conllu", "xml", None, None)


def test_cli_stdin_stdout():
    r = run_cli("convert", "--from", "conll2003", "--to", "conll2003", input=b"A DT I-NP I-ORG\nB NN I-NP I-ORG\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"A DT I-NP B-ORG\nB NN I-NP I-ORG\n\n"


@pytest.mark.parametrize("src,dst,content,line,what", [
    ("conll2003", "conllu", b"A DT I-NP O\nB NN O\n", 2, b"expected 4 space-separated columns"),
    ("conll2012", "conllu", b"d\t0\t0\ta\tDT\t*\tgo\tgo.01\t(V*)\nd\t0\t1\tb\tNN\t*\t-\t-\t*))\n", 2,
     b"unbalanced brackets"),
    ("conll2012", "conllu", b"d\t0\t0\ta\tDT\t*\t-\t-\nd\t0\tone\tb\tNN\t*\t-\t-\n", 2,
     b"token index must be an integer"),
    ("conll2012", "conllu", b"d\t0\t0\ta\tDT\t*\tgo\tgo.01\t(V*)\t(A0*)\n", 1, b"has no V span"),
    ("conll2012", "conllu", b"d\t0\t0\ta\tDT\t*\t-\t-\t*\nd\t0\t1\tb\tVBZ\t*\tgo\tgo|x.01\t(V*)\n", 2,
     b"roleset 'go|x.01' contains '|', which cannot go into MISC Pred= (it separates MISC entries)"),
    ("conllu", "conll2005", b"1\ta\t_\t_\t_\t_\t_\t_\t_\tSRL=3:B-A0\n", 1, b"has no Pred= entry"),
    ("conllu", "conll2003", b"1\ta\t_\t_\t_\t_\t_\t_\t_\tNE=LOC\n", 1, b"bad NE tag 'LOC'"),
])
def test_cli_errors_name_file_and_line(tmp_path, src, dst, content, line, what):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    r = run_cli("convert", "--from", src, "--to", dst, str(bad), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith(f"nlpipe: error: {bad}:{line}: ") and err.count("\n") == 1
    assert what in r.stderr
    assert not (tmp_path / "out").exists()


# A made-up CoNLL-2012 file: a document of two sentences; the second one's second predicate has a
# roleset with '|', which would end its MISC entry and start another (MISC has no escape for it).
PIPE_ROLESET = (
    "#begin document (x/y/weblog/00/z.xml); part 000\n"
    "x/y/weblog/00/z.xml\t0\t0\tCats\tNNS\t*\t-\t-\t(ARG0*)\n"
    "x/y/weblog/00/z.xml\t0\t1\tsleep\tVBP\t*\tsleep\tsleep.01\t(V*)\n"
    "\n"
    "x/y/weblog/00/z.xml\t1\t0\tDogs\tNNS\t*\t-\t-\t(ARG0*)\t(ARG1*)\n"
    "x/y/weblog/00/z.xml\t1\t1\tsay\tVBP\t*\tsay\tsay.01\t(V*)\t*\n"
    "x/y/weblog/00/z.xml\t1\t2\tbark\tVB\t*\tbark\tbark|ne=b-per.01\t(ARG1*)\t(V*)\n"
    "#end document\n")


def test_conll2012_roleset_with_a_bar_is_refused_naming_its_line(tmp_path):
    src = tmp_path / "pipe.gold_conll"
    src.write_text(PIPE_ROLESET, encoding="utf-8")
    out = tmp_path / "out.conllu"
    out.write_text("before\n", encoding="utf-8")
    r = run_cli("convert", "--from", "conll2012", "--to", "conllu", str(src), "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.decode() == (f"nlpipe: error: {src}:7: roleset 'bark|ne=b-per.01' contains '|', which cannot go "
                                 "into MISC Pred= (it separates MISC entries)\n")
    assert out.read_text(encoding="utf-8") == "before\n"     # not replaced
    r = run_cli("convert", "--from", "conll2012", "--to", "conllu", input=PIPE_ROLESET.encode())
    assert r.returncode == 2 and r.stderr.decode().startswith("nlpipe: error: <stdin>:7: roleset 'bark|ne=b-per.01'")
    fine = PIPE_ROLESET.replace("bark|ne=b-per.01", "bark.01")
    r = run_cli("convert", "--from", "conll2012", "--to", "conllu", input=fine.encode())
    assert r.returncode == 0, r.stderr
    assert "3\tbark\tbark\t_\tVB\t_\t_\t_\t_\tPred=bark.01|SRL=2:B-ARG1\n" in r.stdout.decode()


def test_convert_nested_spans_is_an_input_error(tmp_path):
    bad = tmp_path / "nested.gold_conll"
    bad.write_text("d\t0\t0\ta\tDT\t*\tgo\tgo.01\t(V*)\nd\t0\t1\tb\tNN\t*\t-\t-\t(A1(A2*))\n")
    with pytest.raises(InputError, match="nested spans") as e:
        convert("conll2012", "conllu", str(bad), str(tmp_path / "out"))
    assert e.value.line == 1


# --------------------------------------------------------------------------------------------
# Corpus checks (../shared/corpora; skipped with a reason when absent)

@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", [
    "en_ewt/en_ewt-ud-train.conllu", "en_ewt/en_ewt-ud-dev.conllu", "en_ewt/en_ewt-ud-test.conllu",
    "up_en_ewt/en_ewt-up-dev.conllu", "up_en_ewt/en_ewt-up-test.conllu",
    "up_en_ewt/reconstructed/en_ewt-up-train.reconstructed.conllu",
    "up_en_ewt/reconstructed/en_ewt-up-dev.reconstructed.conllu",
    "up_en_ewt/reconstructed/en_ewt-up-test.reconstructed.conllu",
])
def test_corpus_conllu_pass_through(corpora, tmp_path, name):
    src = corpora / name
    if not src.is_file():
        pytest.skip(f"{src} not found")
    out = tmp_path / "out.conllu"
    convert("conllu", "conllu", str(src), str(out))
    assert out.read_bytes() == src.read_bytes()


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_propbank_dev_round_trips(corpora, tmp_path):
    src = corpora / "propbank_en_ewt" / "en_ewt-pb-dev.gold_conll"
    if not src.is_file():
        pytest.skip(f"{src} not found")
    conllu, again, props = tmp_path / "dev.conllu", tmp_path / "again.conllu", tmp_path / "dev.props"
    convert("conll2012", "conllu", str(src), str(conllu))
    convert("conllu", "conllu", str(conllu), str(again))
    assert again.read_bytes() == conllu.read_bytes()
    convert("conllu", "conll2005", str(conllu), str(props))

    def spans(text: str, first_column: int):
        rows = [line.split("\t")[first_column:] for line in text.split("\n") if line]
        return sum(cell.count("(") - cell.count("(V*") for row in rows for cell in row)

    source = src.read_text(encoding="utf-8")
    assert spans(props.read_text(), 1) == spans(source, 8) == 9600  # PROVENANCE.md: 9,600 argument spans
    want = "".join("\t".join([c[6]] + c[8:]) + "\n" if c[0] else "\n"
                   for c in (line.split("\t") for line in source.split("\n")[:-1]))
    assert props.read_text() == want
