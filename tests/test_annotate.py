"""nlpipe annotate: the one-process chain equals the shell pipe of single-stage commands, input
detection, --keep-existing, document-aligned chunks, per-file output, long sentences, progress."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from nlpipe.cli import main
from nlpipe.io.conllu import HEAD, MISC, UPOS, misc_get, parse_string, to_string
from nlpipe.errors import InputError, NlpipeError
from nlpipe.runtime.chain import Pipeline, PipelineSpec, available_stages, shell_equivalent
from nlpipe.runtime.chunks import Chunk, conllu_chunks, process_chunk, sentence_chunks, sentences_in
from nlpipe.runtime.pipeline import run_annotate
from nlpipe.runtime.progress import Progress
from test_annotate_standins import install, make_model, subprocess_env

REPO = Path(__file__).resolve().parent.parent

TEXT = """The harbour town of Kelmsby wakes up early. Mrs. Alder opens her bakery at six.

Boats come back by noon. The gulls follow them in.
Nobody minds.

A third paragraph, with one sentence only.
"""


def conllu(*sentences: str) -> str:
    """CoNLL-U from sentences given as space-separated forms (other columns '_')."""
    out = []
    for k, s in enumerate(sentences, 1):
        lines = [f"# sent_id = s{k}"]
        for i, f in enumerate(s.split(), 1):
            lines.append(f"{i}\t{f}\t_\t_\t_\t_\t_\t_\t_\t_")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def annotate(*args: str, stdin: bytes = b"") -> str:
    """Run `nlpipe annotate ARGS` in this process (stand-ins visible) and return stdout."""
    out = io.BytesIO()

    class FakeStdout:
        buffer = out

    old_in, old_out = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    sys.stdout = FakeStdout()  # type: ignore[assignment]
    try:
        main(["annotate", *args])
    finally:
        sys.stdin, sys.stdout = old_in, old_out
    return out.getvalue().decode("utf-8")


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """Stand-in pos, parse and ner as the default models (and no default predicates/srl model)."""
    return install(tmp_path / "models", monkeypatch)


# ---------------------------------------------------------------------------------------------
# Same bytes as the shell pipe

def test_chain_equals_the_shell_pipe_of_single_stage_commands(tmp_path):
    """Real subprocesses: `nlpipe tokenize | nlpipe pos | nlpipe parse | nlpipe ner` vs `nlpipe annotate`."""
    env = subprocess_env(tmp_path, tmp_path / "models")
    src = tmp_path / "a.txt"
    src.write_text(TEXT, encoding="utf-8")
    nl = [sys.executable, "-m", "nlpipe.cli"]
    pipe = " | ".join([f"{' '.join(nl)} tokenize {src}"] + [f"{' '.join(nl)} {s}" for s in ("pos", "parse", "ner")])
    shell = subprocess.run(pipe, shell=True, capture_output=True, env=env, timeout=300)
    assert shell.returncode == 0, shell.stderr
    one = subprocess.run(nl + ["annotate", "--stages", "tokenize,pos,parse,ner", "--batch", "2", str(src)],
                         capture_output=True, env=env, timeout=300)
    assert one.returncode == 0, one.stderr
    assert one.stdout == shell.stdout
    sents = parse_string(one.stdout.decode("utf-8"))
    assert len(sents) == 6 and sents[1].words[0][UPOS] == "PROPN" and sents[1].words[1][HEAD] == "1"
    assert one.stderr == b""  # quiet when stderr is not a terminal


@pytest.mark.parametrize("batch", ["1", "2", "256"])
def test_chain_equals_stage_by_stage_in_process(tmp_path, standins, batch):
    src = tmp_path / "a.txt"
    src.write_text(TEXT, encoding="utf-8")
    expected = annotate("--stages", "tokenize", str(src))
    for stage in ("pos", "parse", "ner"):
        (tmp_path / "in.conllu").write_text(expected, encoding="utf-8")
        expected = annotate("--stages", stage, str(tmp_path / "in.conllu"))
    assert annotate("--batch", batch, str(src)) == expected


def test_shipped_stages_equal_the_shell_pipe(tmp_path):
    """Whatever real stages have shipped models: the one-process chain equals the pipe."""
    src = REPO / "data" / "sample.txt"
    nl = f"{sys.executable} -m nlpipe.cli"
    filters = [f"{nl} {' '.join(args)}" for args in shell_equivalent(PipelineSpec(available_stages()))]
    pipe = " | ".join([f"{nl} tokenize {src}"] + filters)
    shell = subprocess.run(pipe, shell=True, capture_output=True, timeout=600)
    assert shell.returncode == 0, shell.stderr
    one = run_cli("annotate", "--batch", "3", str(src))
    assert one.returncode == 0, one.stderr
    assert one.stdout == shell.stdout


def test_default_stages_are_the_shipped_ones(standins):
    assert available_stages()[:4] == ["tokenize", "pos", "parse", "ner"]


# ---------------------------------------------------------------------------------------------
# Input detection and --keep-existing

def test_conllu_input_is_not_tokenized_again(tmp_path, standins):
    raw = tmp_path / "a.txt"
    raw.write_text(TEXT, encoding="utf-8")
    tokenized = annotate("--stages", "tokenize", str(raw))
    (tmp_path / "a.conllu").write_text(tokenized, encoding="utf-8")
    assert annotate("--stages", "tokenize", str(tmp_path / "a.conllu")) == tokenized
    assert annotate("--stages", "tokenize", "-", stdin=tokenized.encode()) == tokenized
    # and the whole chain on it equals the chain on the raw text
    assert annotate(str(tmp_path / "a.conllu")) == annotate(str(raw))


def test_text_starting_with_hash_lines_is_raw_text(tmp_path, standins):
    src = tmp_path / "notes.txt"
    src.write_text("# A heading\n\nSome text here.\n", encoding="utf-8")
    sents = parse_string(annotate("--stages", "tokenize", str(src)))
    assert [s.text() for s in sents] == ["# A heading", "Some text here."]


def test_without_tokenize_raw_text_is_an_input_error(tmp_path, standins):
    src = tmp_path / "a.txt"
    src.write_text("Just text.\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"^{src}:1: expected 10 tab-separated columns.*raw text\\? tokenize it"):
        run_annotate([str(src)], str(tmp_path / "out.conllu"), ["pos"])
    assert not (tmp_path / "out.conllu").exists()


def test_keep_existing_skips_filled_sentences(tmp_path, standins):
    text = conllu("Alpha beta", "Gamma delta")
    first, second = parse_string(text)
    for w in first.words:
        w[UPOS] = "X"
    src = tmp_path / "in.conllu"
    src.write_text(to_string([first, second]), encoding="utf-8")
    kept = parse_string(annotate("--stages", "pos", "--keep-existing", str(src)))
    assert [w[UPOS] for w in kept[0].words] == ["X", "X"]
    assert [w[UPOS] for w in kept[1].words] == ["PROPN", "NOUN"]
    redone = parse_string(annotate("--stages", "pos", str(src)))
    assert [w[UPOS] for w in redone[0].words] == ["PROPN", "NOUN"]
    # parse runs on both (no HEAD filled), seeing the kept tags
    both = parse_string(annotate("--stages", "pos,parse", "--keep-existing", str(src)))
    assert both[0].words[1][7] == "dep:x" and both[1].words[1][7] == "dep:noun"


# ---------------------------------------------------------------------------------------------
# Chunks

def test_chunks_concatenate_to_the_input_and_cut_between_sentences():
    data = ("\ufeff# newdoc id = d1\n" + conllu("a b", "c")[:-1] + "\r\n\n\n"
            + "# newdoc\n" + conllu("d", "e f g")).encode("utf-8")
    for batch in (1, 2, 3, 10):
        chunks = list(conllu_chunks(io.BytesIO(data), "x", batch))
        assert b"".join(c.data for c in chunks) == data
        assert all(len(parse_string(c.data.decode())) <= batch for c in chunks)
        lines = 1
        for c in chunks:
            assert c.first_line == lines
            lines += c.data.count(b"\n")


def test_a_file_of_known_sentences_is_cut_for_the_workers(tmp_path):
    data = conllu(*["w x"] * 10).encode()
    path = tmp_path / "ten.conllu"
    path.write_bytes(data.replace(b"\n", b"\r\n", 4))    # a CRLF blank line counts too
    assert sentences_in(str(path), path.stat().st_size) == 10
    assert sentences_in(str(tmp_path / "none.conllu"), 100) == 0

    def sizes(**kw):
        return [len(parse_string(c.data.decode())) for c in conllu_chunks(io.BytesIO(data), "x", 4, **kw)]

    assert sizes() == [4, 4, 2]
    assert sizes(sentences=10, parts=2) == [4, 4, 2]        # 4 + 2 against 4 + 4: already even
    assert sizes(sentences=6, parts=2) == [3, 3, 3, 1]      # 3 + 3, where 4 + 2 would wait for the 4
    assert sizes(sentences=10, parts=8) == [2, 2, 2, 2, 2]
    assert sizes(sentences=6, parts=1) == [4, 4, 2]
    assert sizes(sentences=6, parts=2, document=True) == [10]   # only at a "# newdoc", as before


def test_document_chunks_end_only_at_newdoc():
    docs = []
    for d in range(3):
        sents = parse_string(conllu(*["w"] * (d + 2)))
        sents[0].comments.insert(0, f"# newdoc id = d{d}")
        docs.append(to_string(sents))
    data = "".join(docs).encode()
    chunks = list(conllu_chunks(io.BytesIO(data), "x", 1, document=True))
    assert [c.data.decode() for c in chunks] == docs
    built = parse_string(data.decode())
    assert [len(c.sentences) for c in sentence_chunks(built, "x", 1, document=True)] == [2, 3, 4]
    # a document longer than the cap is cut anyway
    assert max(len(c.sentences) for c in sentence_chunks(parse_string(conllu(*["w"] * 40)), "x", 1,
                                                         document=True)) == 16


def test_document_stage_sees_whole_documents_whatever_the_batch(tmp_path, standins):
    text = ""
    for d in range(3):
        sents = parse_string(conllu(*["Word here"] * 5))
        sents[0].comments.insert(0, f"# newdoc id = d{d}")
        text += to_string(sents)
    src = tmp_path / "in.conllu"
    src.write_text(text, encoding="utf-8")
    out = parse_string(annotate("--stages", "ner", "--batch", "2", str(src)))
    assert [misc_get(s.words[0][MISC], "Doc") for s in out] == [str(k) for k in range(1, 6)] * 3


# ---------------------------------------------------------------------------------------------
# Several inputs, per-file output

def test_several_inputs_into_one_output_and_into_a_directory(tmp_path, standins):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("First file here.\n", encoding="utf-8")
    b.write_text("Second file. Two sentences.\n", encoding="utf-8")
    together = annotate(str(a), str(b))
    assert together == annotate(str(a)) + annotate(str(b))
    out = tmp_path / "out"
    main(["annotate", str(a), str(b), "-o", str(out) + "/"])
    assert (out / "a.conllu").read_text(encoding="utf-8") == annotate(str(a))
    assert (out / "b.conllu").read_text(encoding="utf-8") == annotate(str(b))
    # finished files are not redone
    (out / "a.conllu").write_text("kept\n", encoding="utf-8")
    main(["annotate", str(a), str(b), "-o", str(out)])
    assert (out / "a.conllu").read_text(encoding="utf-8") == "kept\n"


def test_per_file_output_refuses_name_clashes_and_stdin(tmp_path, standins):
    (tmp_path / "x").mkdir()
    (tmp_path / "a.txt").write_text("A.\n")
    (tmp_path / "x" / "a.txt").write_text("A.\n")
    with pytest.raises(NlpipeError, match="would both be written"):
        run_annotate([str(tmp_path / "a.txt"), str(tmp_path / "x" / "a.txt")], str(tmp_path / "o") + "/")
    with pytest.raises(NlpipeError, match="not stdin"):
        run_annotate(["-"], str(tmp_path / "o") + "/")


def test_option_errors(tmp_path, standins, capsys):
    with pytest.raises(NlpipeError, match="unknown stage"):
        run_annotate(["-"], "-", ["pos", "lemma"])
    with pytest.raises(SystemExit) as exit:
        main(["annotate", "--model", "pos"])
    assert exit.value.code == 2
    assert capsys.readouterr().err == "nlpipe: error: --model expects STAGE=MODEL, got 'pos'\n"
    with pytest.raises(NlpipeError, match="not among the stages"):
        run_annotate(["-"], "-", ["pos"], models={"parse": "x"})
    with pytest.raises(NlpipeError, match="no such model"):
        run_annotate(["-"], "-", ["pos"], models={"pos": str(tmp_path / "nope")})
    with pytest.raises(NlpipeError, match="--jobs"):
        run_annotate(["-"], "-", ["pos"], jobs=0)


def test_no_model_for_a_stage_fails_before_writing(tmp_path, monkeypatch, capsys):
    from nlpipe import registry

    monkeypatch.setitem(registry.DEFAULT_MODELS, "srl", [])
    out = tmp_path / "out.conllu"
    with pytest.raises(SystemExit) as e:
        main(["annotate", "--stages", "tokenize,srl", str(REPO / "data" / "sample.txt"), "-o", str(out)])
    assert e.value.code == 2 and "no model for stage srl" in capsys.readouterr().err and not out.exists()


def test_model_option_picks_a_model_directory(tmp_path, standins):
    other = make_model(tmp_path / "other", "pos", max_len=100)
    src = tmp_path / "in.conllu"
    src.write_text(conllu("Alpha beta"), encoding="utf-8")
    out = parse_string(annotate("--stages", "pos", "--model", f"pos={other}", str(src)))
    assert out[0].words[0][UPOS] == "PROPN"


# ---------------------------------------------------------------------------------------------
# Sentences longer than a model's limit

def test_long_sentence_is_windowed_by_a_windowable_stage(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, max_len=3)
    forms = "Aa bb Cc dd ee Ff gg"
    spec = PipelineSpec(["pos"])
    chunk = Chunk("in.conllu", data=conllu(forms).encode())
    result = process_chunk(Pipeline.load(spec), chunk)
    words = parse_string(result.text)[0].words
    assert [w[UPOS] for w in words] == ["PROPN", "NOUN", "PROPN", "NOUN", "NOUN", "PROPN", "NOUN"]
    assert [w[0] for w in words] == [str(i) for i in range(1, 8)]
    assert result.warnings == ["sentence s1 (in.conllu:1): 7 words, more than the pos model's limit of 3; "
                               "annotated in windows"]


def test_long_sentence_passes_through_a_stage_that_cannot_window(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, stages=("pos",))
    install(tmp_path, monkeypatch, stages=("parse",), max_len=3)
    src = tmp_path / "in.conllu"
    src.write_text(conllu("Short one", "A much longer sentence here"), encoding="utf-8")
    out = parse_string(annotate("--stages", "pos,parse", str(src)))
    assert [w[HEAD] for w in out[0].words] == ["0", "1"]
    assert [w[HEAD] for w in out[1].words] == ["_"] * 5
    assert [w[UPOS] for w in out[1].words][0] == "PROPN"
    spec = PipelineSpec(["pos", "parse"])
    res = process_chunk(Pipeline.load(spec), Chunk(str(src), data=src.read_bytes()))
    assert res.warnings == [f"sentence s2 ({src}:5): 5 words, more than the parse model's limit of 3; "
                            "passed through without parse"]


# ---------------------------------------------------------------------------------------------
# Progress

class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_with_rate_and_eta():
    now = [0.0]
    p = Progress("annotate", total=1000, unit="sentences", work_unit="tokens", stream=FakeTTY(),
                 clock=lambda: now[0])
    now[0] = 10.0
    p.update(50, 2000, position=250)
    assert p.stream.getvalue() == "\rannotate: 50 sentences, 2,000 tokens, 200 tokens/s, 25% ETA 0:30"
    now[0] = 20.0
    p.close()
    assert p.stream.getvalue().endswith("\rannotate: 50 sentences, 2,000 tokens, 100 tokens/s in 0:20      \n")  # padded over the longer line


def test_progress_line_is_cleared_for_a_message():
    now = [0.0]
    p = Progress("annotate", stream=FakeTTY(), clock=lambda: now[0])
    now[0] = 1.0
    p.update(20)
    p.clear()
    assert p.stream.getvalue() == "\rannotate: 20 items, 20 items/s" + "\r" + " " * 30 + "\r"
    p.update(1)  # redrawn at once
    assert p.stream.getvalue().endswith("\rannotate: 21 items, 21 items/s")


def test_progress_for_a_training_loop_without_total_or_terminal():
    now = [0.0]
    out = io.StringIO()
    p = Progress("train pos", unit="epochs", stream=out, clock=lambda: now[0])
    p.update(1, loss="0.5")
    assert out.getvalue() == ""  # not a terminal, not asked
    q = Progress("train pos", total=4, unit="epochs", stream=out, enabled=True, interval=5, clock=lambda: now[0])
    now[0] = 2.0
    q.update(1, loss="0.5")
    assert out.getvalue() == ""  # within the interval
    now[0] = 6.0
    q.update(1, loss="0.4")
    assert out.getvalue() == "train pos: 2 epochs, 0.33 epochs/s, loss 0.4, 50% ETA 0:06\n"


def test_progress_option_prints_to_stderr(tmp_path):
    r = run_cli("annotate", "--progress", str(REPO / "data" / "sample.txt"))
    assert r.returncode == 0
    last = r.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("annotate: ") and "sentences" in last and "tokens/s" in last


def test_quiet_without_a_terminal(tmp_path):
    r = run_cli("annotate", str(REPO / "data" / "sample.txt"))
    assert r.returncode == 0 and r.stderr == b""


def test_progress_shows_on_a_terminal(tmp_path):
    """stderr on a pseudo-terminal: the status line is redrawn in place and ends with the summary."""
    import pty

    src = tmp_path / "big.txt"
    src.write_text((REPO / "data" / "sample.txt").read_text(encoding="utf-8") * 20, encoding="utf-8")
    master, slave = pty.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "nlpipe.cli", "annotate", str(src), "-o", str(tmp_path / "o")],
                           stderr=slave, timeout=300)
        os.close(slave)
        seen = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
    finally:
        os.close(master)
    assert r.returncode == 0
    text = seen.decode()
    assert text.startswith("\r") and "\nannotate:" not in text
    last = text.rstrip().splitlines()[-1].split("\r")[-1]
    assert last.startswith("annotate: ") and " sentences, " in last and " tokens/s in " in last


def test_chain_runs_lisa_once_and_feeds_it_the_chains_parse():
    from nlpipe.runtime.chain import PipelineSpec, chain_options, chain_stages, shell_equivalent

    spec = PipelineSpec(["tokenize", "pos", "parse", "predicates", "srl"])
    assert chain_stages(spec) == ["pos", "parse", "srl"]
    assert chain_options("srl", spec) == {"parse_from_input": True} and chain_options("parse", spec) == {}
    assert chain_options("srl", PipelineSpec(["pos", "srl"])) == {}
    other = PipelineSpec(["predicates", "srl"], models={"predicates": "elsewhere"})
    assert chain_stages(other) == ["predicates", "srl"]
    assert shell_equivalent(spec) == [["pos"], ["parse"], ["srl", "--parse-from-input"]]
    assert shell_equivalent(other) == [["predicates", "--model", "elsewhere"], ["srl"]]
