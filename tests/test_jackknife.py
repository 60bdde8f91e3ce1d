"""Jack-knifed POS tags for parser training (nlpipe train jackknife)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nlpipe.io.conllu import HEAD, UPOS, XPOS, parse_string, read_file
from nlpipe.errors import NlpipeError
from nlpipe.train.jackknife import document_folds, jackknife
from test_pos import TRAIN, TRAIN_ARGS


def doc_file(docs: int, per_doc: int = 2) -> str:
    """``docs`` documents of ``per_doc`` copies of the test_pos training sentences each."""
    base = parse_string(TRAIN)
    out = []
    for d in range(docs):
        for k in range(per_doc):
            s = base[(d + k) % len(base)]
            comments = ([f"# newdoc id = d{d}"] if k == 0 else []) + [f"# sent_id = d{d}-{k}"]
            out.append("\n".join(comments + ["\t".join(w) for w in s.words]) + "\n\n")
    return "".join(out)


def test_folds_cut_at_document_starts_into_near_equal_contiguous_parts():
    sents = parse_string(doc_file(6, per_doc=2) + doc_file(1, per_doc=6).replace("d0", "big"))
    parts = document_folds(sents, 3)
    assert [i for p in parts for i in p] == list(range(len(sents)))
    assert all(sents[p[0]].meta("newdoc") is not None for p in parts)
    assert [len(p) for p in parts] == [6, 6, 6]
    with pytest.raises(NlpipeError, match="at least 2"):
        document_folds(sents, 1)
    with pytest.raises(NlpipeError, match="2 sentences cannot make 3 folds"):
        document_folds(sents[:2], 3)


def test_fewer_documents_than_folds_are_cut_between_sentences_with_a_warning():
    sents = parse_string(doc_file(1, per_doc=5))        # one # newdoc
    said = []
    parts = document_folds(sents, 2, warn=said.append)
    assert parts == [[0, 1], [2, 3, 4]] or parts == [[0, 1, 2], [3, 4]]
    assert said == ["1 document (# newdoc) cannot make 2 folds: the folds are cut between sentences instead"]
    assert document_folds(sents, 2, interleave=True) == [[0, 2, 4], [1, 3]]


def test_a_file_without_documents_is_cut_between_any_sentences():
    sents = parse_string(TRAIN)
    assert [len(p) for p in document_folds(sents, 2)] == [2, 2]


def test_interleaved_folds_deal_the_documents_out_in_turn():
    sents = parse_string(doc_file(5, per_doc=2))            # documents of sentences 0-1, 2-3, ... 8-9
    assert document_folds(sents, 2, interleave=True) == [[0, 1, 4, 5, 8, 9], [2, 3, 6, 7]]
    assert document_folds(parse_string(TRAIN), 2, interleave=True) == [[0, 2], [1, 3]]   # no documents


def test_jackknife_tags_every_sentence_with_a_model_that_did_not_see_it(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(doc_file(6), encoding="utf-8")
    out = tmp_path / "jk.conllu"
    parts = jackknife(str(train), str(train), str(out), folds=3, jobs=2, work=str(tmp_path / "work"),
                      pos_args=[*TRAIN_ARGS, "--no-clusters"], interleave=True)
    gold, tagged = list(read_file(str(train))), list(read_file(str(out)))
    assert parts == [[0, 1, 6, 7], [2, 3, 8, 9], [4, 5, 10, 11]] and len(tagged) == len(gold)
    for g, t in zip(gold, tagged):
        assert t.comments == g.comments and t.forms() == g.forms()
        assert [w[HEAD] for w in t.words] == [w[HEAD] for w in g.words]
        assert all(w[UPOS] != "_" and w[XPOS] != "_" for w in t.words)
    for k, p in enumerate(parts):  # each fold's model was trained on the other folds only
        seen = {s.meta("sent_id") for s in read_file(str(tmp_path / "work" / f"fold-{k}" / "train.conllu"))}
        assert seen.isdisjoint(gold[i].meta("sent_id") for i in p) and len(seen) == len(gold) - len(p)


def test_a_failing_fold_is_a_clear_error_and_writes_nothing(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(doc_file(4), encoding="utf-8")
    out = tmp_path / "jk.conllu"
    r = subprocess.run([sys.executable, "-m", "nlpipe", "train", "jackknife", "--train", str(train), "--dev", str(train),
                        "-o", str(out), "--folds", "2", "--work", str(tmp_path / "w"), "--", "--epochs", "x"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "nlpipe train pos failed" in r.stderr and "train.log" in r.stderr
    assert not out.exists()


def test_the_default_work_folder_is_removed_after_a_success(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    train = tmp_path / "train.conllu"
    train.write_text(doc_file(2), encoding="utf-8")
    jackknife(str(train), str(train), str(tmp_path / "jk.conllu"), folds=2, pos_args=[*TRAIN_ARGS, "--no-clusters"])
    assert (tmp_path / "jk.conllu").exists() and not any((tmp_path / "tmp").iterdir())


def test_jackknife_on_a_file_of_one_document_warns_and_runs(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(doc_file(1, per_doc=4), encoding="utf-8")
    out = tmp_path / "jk.conllu"
    r = subprocess.run([sys.executable, "-m", "nlpipe", "train", "jackknife", "--train", str(train), "--dev", str(train),
                        "-o", str(out), "--folds", "2", "--", *TRAIN_ARGS, "--no-clusters"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "nlpipe: warning: 1 document (# newdoc) cannot make 2 folds: the folds are cut between sentences" in r.stderr
    assert len(list(read_file(str(out)))) == 4
