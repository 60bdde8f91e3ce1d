"""``--to conllu|json|text|tree`` on annotate, tokenize and the stage filters, and ``convert --to text``,
as a user types them; the trees are drawn by hand here."""
from __future__ import annotations

import json

from conftest import run_cli

PARSED = (
    "# newdoc\n# newpar\n# sent_id = s1\n# text = I saw a dog.\n"
    "1\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n"
    "2\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "3\ta\ta\tDET\tDT\t_\t4\tdet\t_\t_\n"
    "4\tdog\tdog\tNOUN\tNN\t_\t2\tobj\t_\tSpaceAfter=No|NE=B-ANIMAL\n"
    "5\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
    "# newpar\n# sent_id = s2\n# text = Hi there\n"
    "1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tthere\t_\t_\t_\t_\t_\t_\t_\t_\n\n")

TREES = """# sent_id = s1
# text = I saw a dog.
─┮
 │ ╭─╼ I PRON nsubj
 ╰─┾ saw VERB root
   │ ╭─╼ a DET det
   ├─┶ dog NOUN obj
   ╰─╼ . PUNCT punct

# sent_id = s2
# text = Hi there
─┮
 ├─╼ Hi
 ╰─╼ there

"""


def test_convert_draws_trees_and_gives_text_back(tmp_path):
    src = tmp_path / "a.conllu"
    src.write_text(PARSED, encoding="utf-8")
    r = run_cli("convert", "--to", "tree", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode("utf-8") == TREES
    r = run_cli("convert", "--to", "text", str(src))
    assert r.stdout.decode("utf-8") == "I saw a dog.\n\nHi there\n"


def test_json_lines_have_named_fields(tmp_path):
    src = tmp_path / "a.conllu"
    src.write_text(PARSED, encoding="utf-8")
    r = run_cli("convert", "--to", "json", str(src))
    first, second = [json.loads(line) for line in r.stdout.decode("utf-8").splitlines()]
    assert (first["sent_id"], first["text"], second["text"]) == ("s1", "I saw a dog.", "Hi there")
    dog = first["words"][3]
    assert dog == {"id": 4, "form": "dog", "lemma": "dog", "upos": "NOUN", "xpos": "NN", "feats": None, "head": 2,
                   "deprel": "obj", "deps": None, "misc": "SpaceAfter=No|NE=B-ANIMAL", "ne": "B-ANIMAL",
                   "pred": None, "roles": {}}
    assert second["words"][0]["head"] is None and second["tokens"] == []


def test_annotate_and_filters_write_every_format():
    text = b"Mary can't see the dog. It sleeps."
    tree = run_cli("annotate", "--stages", "tokenize,pos,parse", "--to", "tree", "-", input=text)
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.decode("utf-8").splitlines()
    assert lines[:3] == ["# sent_id = stdin-1", "# text = Mary can't see the dog.", "─┮"]
    assert sum(line.endswith(" root") for line in lines) == 2
    assert any(line.endswith("n't PART advmod") for line in lines)
    as_text = run_cli("annotate", "--stages", "tokenize,pos", "--to", "text", "-", input=text)
    assert as_text.stdout == b"Mary can't see the dog.\nIt sleeps.\n"
    tokens = run_cli("tokenize", "--to", "json", "-", input=text)
    objs = [json.loads(line) for line in tokens.stdout.decode("utf-8").splitlines()]
    assert [[w["form"] for w in o["words"]] for o in objs] == [["Mary", "ca", "n't", "see", "the", "dog", "."],
                                                               ["It", "sleeps", "."]]
    assert objs[0]["tokens"] == [{"id": "2-3", "form": "can't"}]
    conllu = run_cli("tokenize", "-", input=text).stdout
    tagged = run_cli("pos", "--to", "json", "-", input=conllu)
    assert tagged.returncode == 0, tagged.stderr
    assert all(w["upos"] for line in tagged.stdout.decode("utf-8").splitlines() for w in json.loads(line)["words"])


def test_formats_that_cannot_be_written_are_refused_before_work(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Hi.\n", encoding="utf-8")
    r = run_cli("annotate", "--to", "json", str(src), "-o", f"{tmp_path}/out/")
    assert r.returncode == 2 and b"--to json" in r.stderr
    r = run_cli("annotate", "--to", "tree", "--skip-bad", str(src))
    assert r.returncode == 2 and b"--skip-bad" in r.stderr
