"""--jobs N on raw text: the workers tokenize whole paragraphs, and the output keeps the bytes of one
process (sent_ids counting through the input, one ``# newdoc``, warnings naming the right sentence)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nlpipe.errors import InputError
from nlpipe.runtime import chunks
from nlpipe.runtime.chunks import ChunkResult, even_size, renumbered, text_chunks
from nlpipe.runtime.pipeline import run_annotate
from nlpipe.stages.tokenize import Tokenizer
from test_annotate_standins import install

BOM = "\ufeff"
# paragraphs of one to three sentences; a mid-file paragraph whose first character is U+FEFF (only
# the file's first one is a byte-order mark), CRLF endings, white-space-only separator lines
TEXT = BOM + "".join(
    f"Paragraph {p} starts here.{' It goes on for a while, Mr. Smith said.' * (p % 3)}\r\n"
    f"{'A second line of it.' if p % 4 == 0 else 'Short.'}\r\n"
    + ("  \n" if p % 5 == 0 else "\n")
    + (BOM + "Odd start of a paragraph.\n\n" if p == 17 else "")
    for p in range(40))


def annotate(tmp_path: Path, src: Path, name: str, **kw) -> str:
    out = tmp_path / name
    run_annotate([str(src)], str(out), stages=["tokenize", "pos"], **kw)
    return out.read_text(encoding="utf-8")


@pytest.fixture
def raw(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "text.txt"
    src.write_text(TEXT, encoding="utf-8", newline="")
    return src


def tokenizing_pids(tmp_path: Path, monkeypatch) -> Path:
    """A file that gets the pid of every process that tokenizes (the workers inherit the spy)."""
    log = tmp_path / "tokenized-by.log"
    real = Tokenizer.tokenize

    def spy(self, *args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Tokenizer, "tokenize", spy)
    return log


@pytest.mark.parametrize("batch", [1, 2, 1024])
def test_workers_tokenize_raw_text_into_the_bytes_of_one_process(tmp_path, monkeypatch, raw, batch):
    one = annotate(tmp_path, raw, "one.conllu", batch=batch)
    log = tokenizing_pids(tmp_path, monkeypatch)
    two = annotate(tmp_path, raw, "two.conllu", batch=batch, jobs=2)
    assert two == one
    ids = re.findall(r"^# sent_id = text-(\d+)$", two, flags=re.M)
    assert [int(i) for i in ids] == list(range(1, len(ids) + 1)) and len(ids) > 60
    assert two.count("# newdoc") == 1 and two.startswith("# newdoc\n")
    assert "# text = \ufeffOdd start" in two
    pids = set(log.read_text().split())
    assert pids and str(os.getpid()) not in pids


def test_one_sentence_a_line_in_workers(tmp_path, monkeypatch, raw):
    one = annotate(tmp_path, raw, "one.conllu", batch=1, input_mode="sentences")
    assert annotate(tmp_path, raw, "two.conllu", batch=1, input_mode="sentences", jobs=2) == one


def test_one_sentence_a_line_without_blank_lines_is_cut_between_lines(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "lines.txt"
    src.write_text("".join(f"Sentence number {k} is here. It has two parts.\n" for k in range(200))
                   + "\nA new paragraph.\nIts second line.\n", encoding="utf-8")
    one = annotate(tmp_path, src, "one.conllu", batch=1, input_mode="sentences")
    assert one.count("# newpar") == 2 and one.count("# sent_id") == 202
    log = tokenizing_pids(tmp_path, monkeypatch)
    assert annotate(tmp_path, src, "two.conllu", batch=1, input_mode="sentences", jobs=2) == one
    assert str(os.getpid()) not in set(log.read_text().split())


def test_a_paragraph_past_the_cap_is_tokenized_by_the_main_process(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "long.txt"
    # short paragraphs (a chunk for a worker), then one of 300 lines: with a cap of twice a chunk's
    # size, that paragraph and the rest are tokenized here
    src.write_text("".join(f"Short paragraph {k}. Two.\n\n" for k in range(12))
                   + "".join(f"Line {k} of one paragraph.\n" for k in range(300)), encoding="utf-8")
    one = annotate(tmp_path, src, "one.conllu", batch=2)
    monkeypatch.setattr(chunks, "TEXT_CAP", 2)
    log = tokenizing_pids(tmp_path, monkeypatch)
    assert annotate(tmp_path, src, "two.conllu", batch=2, jobs=2) == one
    pids = set(log.read_text().split())
    assert str(os.getpid()) in pids and len(pids) >= 2


def test_warnings_name_the_sentence_by_its_place_in_the_input(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",), max_len=3)
    src = tmp_path / "w.txt"
    src.write_text("".join(f"Para {p} has five words.\n\n" for p in range(12)), encoding="utf-8")
    warnings = []
    monkeypatch.setattr("nlpipe.runtime.pipeline.print_warning", warnings.append)
    one = annotate(tmp_path, src, "one.conllu", batch=1)
    two = annotate(tmp_path, src, "two.conllu", batch=1, jobs=2)
    assert one == two
    assert len(warnings) == 24 and warnings[:12] == warnings[12:]
    assert "sentence w-12 " in warnings[11]


def test_a_bad_byte_is_reported_with_its_line_under_jobs(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "bad.txt"
    src.write_bytes(b"".join(b"Paragraph %d here.\n\n" % p for p in range(30)) + b"caf\xe9 au lait.\n")
    out = tmp_path / "out.conllu"
    with pytest.raises(InputError) as e:
        run_annotate([str(src)], str(out), stages=["tokenize", "pos"], jobs=2, batch=1)
    assert (e.value.path, e.value.line) == (str(src), 61)
    assert not out.exists()


def test_text_is_cut_only_where_a_paragraph_ends():
    lines = ["a" * 50, "b" * 50, "", "c" * 120, "", "", "d"]
    cut = list(text_chunks(lines, "t.txt", 1, "raw", tokenizer=lambda: None))
    assert [c.text for c in cut] == ["\n" + "a" * 50 + "\n" + "b" * 50 + "\n\n",
                                     "\n" + "c" * 120 + "\n\n", "\n\nd\n"]
    assert all(c.numbered and c.mode == "raw" and not c.continues for c in cut)
    by_line = list(text_chunks(lines, "t.txt", 1, "sentences", tokenizer=lambda: None))
    assert [c.text for c in by_line] == ["\n" + "a" * 50 + "\n" + "b" * 50 + "\n", "\n\n" + "c" * 120 + "\n",
                                         "\n\n\nd\n"]
    assert [c.continues for c in by_line] == [False, False, False]
    inside = list(text_chunks(["a" * 120, "b"], "t.txt", 1, "sentences", tokenizer=lambda: None))
    assert [(c.text, c.continues) for c in inside] == [("\n" + "a" * 120 + "\n", False), ("\nb\n", True)]


def test_even_size_cuts_a_known_total_into_a_multiple_of_the_parts():
    assert even_size(100, 250, 2) == 63      # 4 chunks, 2 a worker, not 100 + 100 + 50
    assert even_size(100, 150, 2) == 75      # 2 chunks
    assert even_size(100, 1000, 3) == 84     # 12 chunks
    assert even_size(100, 40, 2) == 20       # a small input still keeps both workers busy
    assert even_size(100, 390, 2) == 100     # 100 + 100 | 100 + 90 is as even as it gets
    assert even_size(100, 400, 2) == 100
    assert even_size(100, None, 2) == 100    # a stream: size unknown
    assert even_size(100, 0, 2) == 100       # a pipe's size reads as 0
    assert even_size(100, 250, 1) == 100


def test_a_file_of_known_size_is_cut_for_the_workers():
    lines = ["x" * 40, ""] * 12                       # 12 paragraphs of 42 characters
    plain = list(text_chunks(lines, "t.txt", 1, "raw", tokenizer=lambda: None))
    assert [c.text.count("x" * 40) for c in plain] == [3, 3, 3, 3]
    even = list(text_chunks(lines, "t.txt", 1, "raw", tokenizer=lambda: None, total=504, parts=2))
    assert [c.text.count("x" * 40) for c in even] == [2] * 6
    assert all(c.text.startswith("\n" + "x" * 40) for c in even)


def test_renumbered_counts_on_from_the_sentences_before():
    text = "# newdoc\n# sent_id = t-1\n1\tA\n\n# sent_id = t-2\n1\tB\n\n"
    numbers = [(text.index("t-1") + 2, 1), (text.index("t-2") + 2, 2)]
    result = ChunkResult(text, ["sentence t-2 (t.txt): too long"], 2, 2, numbers=numbers)
    assert renumbered(result, 0) == (text, ["sentence t-2 (t.txt): too long"])
    assert renumbered(result, 9) == ("# sent_id = t-10\n1\tA\n\n# sent_id = t-11\n1\tB\n\n",
                                     ["sentence t-11 (t.txt): too long"])
    plain = ChunkResult("x", ["w"], 1, 1)
    assert renumbered(plain, 5) == ("x", ["w"])


@pytest.mark.parametrize("args", [{}, {"probs": True}, {"method": "rules"}, {"mode": "sentences"},
                                  {"output_format": "json"}])
def test_the_tokenize_command_in_workers_writes_the_bytes_of_one_process(tmp_path, monkeypatch, args):
    from nlpipe.runtime.pipeline import run_tokenize

    src = tmp_path / "text.txt"
    src.write_text(TEXT, encoding="utf-8", newline="")
    one, two = tmp_path / "one.out", tmp_path / "two.out"
    assert run_tokenize(str(src), str(one), jobs=1, **args) > 60
    monkeypatch.setattr(chunks, "TEXT_CHARS", 1)      # chunks of about 1,024 characters
    log = tokenizing_pids(tmp_path, monkeypatch)
    run_tokenize(str(src), str(two), jobs=2, **args)
    assert two.read_bytes() == one.read_bytes()
    pids = set(log.read_text().split())
    assert len(pids) >= 2 and str(os.getpid()) not in pids


def test_tokenize_reads_stdin_in_one_process_even_with_jobs(tmp_path):
    from conftest import run_cli

    src = tmp_path / "text.txt"
    src.write_text(TEXT, encoding="utf-8", newline="")
    one = run_cli("tokenize", str(src), "-j", "1")
    piped = run_cli("tokenize", "-", "-j", "2", input=TEXT.encode("utf-8"))
    assert piped.returncode == 0 and piped.stdout.replace(b"stdin-", b"text-") == one.stdout


def test_tokenize_takes_a_worker_a_core_for_a_file_of_several_chunks(tmp_path, monkeypatch):
    from nlpipe.runtime import pipeline

    monkeypatch.setattr(pipeline, "usable_cpus", lambda: 8)
    big = tmp_path / "big.txt"
    big.write_text("x" * (3 * 1024 * chunks.TEXT_CHARS + 10), encoding="utf-8")
    assert pipeline.auto_jobs(str(big), 1024, "cpu", chunks.TEXT_CHARS) == 3
    assert pipeline.auto_jobs(str(big), 256, "cpu", chunks.TEXT_CHARS) == 8
    assert pipeline.auto_jobs("-", 1024, "cpu", chunks.TEXT_CHARS) == 1


def test_tokenize_in_workers_reports_a_bad_byte_with_its_line_and_the_way_on(tmp_path):
    from nlpipe.errors import NlpipeError
    from nlpipe.runtime.pipeline import run_tokenize

    src = tmp_path / "bad.txt"
    src.write_bytes(b"".join(b"Paragraph %d here.\n\n" % p for p in range(30)) + b"caf\xe9 au lait.\n")
    out = tmp_path / "out.conllu"
    with pytest.raises(InputError) as e:
        run_tokenize(str(src), str(out), jobs=2)
    assert (e.value.path, e.value.line) == (str(src), 61) and "--encoding-errors replace" in str(e.value)
    assert not out.exists()
    with pytest.raises(NlpipeError, match="--jobs must be at least 1"):
        run_tokenize(str(src), str(out), jobs=0)


def test_chunks_of_long_sentences_end_at_a_number_of_words():
    from nlpipe.io.conllu import parse_string
    from nlpipe.runtime.chunks import sentence_chunks

    sents = parse_string("".join(f"1\tw{k}\t_\t_\t_\t_\t_\t_\t_\t_\n2\tx\t_\t_\t_\t_\t_\t_\t_\t_\n"
                                 f"3\ty\t_\t_\t_\t_\t_\t_\t_\t_\n\n" for k in range(7)))
    assert [len(c.sentences) for c in sentence_chunks(sents, "t", 100, max_words=5)] == [2, 2, 2, 1]
    assert [len(c.sentences) for c in sentence_chunks(sents, "t", 3)] == [3, 3, 1]
