"""nlpipe.io.misc: the NE=, Pred= and SRL= codecs (hand-written sentences, expectations by hand)."""
import pytest

from nlpipe.errors import InputError
from nlpipe.io.conllu import MISC, parse_string
from nlpipe.io.misc import (Frame, frames_from_misc, frames_to_misc, ne_tags, predicates, set_ne_tags,
                            set_predicates, set_srl_tags, srl_tags)


def _sentence(*miscs):
    rows = "".join(f"{i}\tw{i}\t_\t_\t_\t_\t_\t_\t_\t{m}\n" for i, m in enumerate(miscs, 1))
    return parse_string("# sent_id = s\n" + rows + "\n", "f.conllu")[0]


def test_ne_read_and_write():
    s = _sentence("SpaceAfter=No|NE=B-PER", "NE=E-PER", "_", "NE=S-LOC")
    assert ne_tags(s) == ["B-PER", "E-PER", "O", "S-LOC"]
    set_ne_tags(s, ["O", "B-ORG", "B-LOC", "O"])
    assert [w[MISC] for w in s.words] == ["SpaceAfter=No", "NE=B-ORG", "NE=B-LOC", "_"]


@pytest.mark.parametrize("misc", ["NE=PER", "NE=X-PER", "NE=B-"])
def test_bad_ne_tag_names_file_and_line(misc):
    s = _sentence("_", misc)
    with pytest.raises(InputError) as e:
        ne_tags(s, "f.conllu")
    assert (e.value.path, e.value.line) == ("f.conllu", 3) and "bad NE tag" in e.value.message


def test_predicates_read_and_write():
    s = _sentence("Pred=say.01", "_", "Gloss=x|Pred=Y")
    assert predicates(s) == {0: "say.01", 2: "Y"}
    set_predicates(s, {1: "go.02"})
    assert [w[MISC] for w in s.words] == ["_", "Pred=go.02", "Gloss=x"]


def test_srl_read_and_write():
    # predicates at words 2 and 4; word 1 is ARG0 of both, words 3-4 ARG1 of the first
    s = _sentence("SRL=2:B-ARG0,4:B-ARG0", "Pred=say.01", "SRL=2:B-ARG1", "Pred=Y|SRL=2:I-ARG1", "_")
    assert srl_tags(s) == {1: ["B-ARG0", "O", "B-ARG1", "I-ARG1", "O"], 3: ["B-ARG0", "O", "O", "O", "O"]}
    set_srl_tags(s, [(3, ["O", "O", "B-A", "O", "B-B"]), (1, ["B-C", "O", "B-A", "O", "O"])])
    assert [w[MISC] for w in s.words] == ["SRL=2:B-C", "Pred=say.01", "SRL=4:B-A,2:B-A", "Pred=Y", "SRL=4:B-B"]


@pytest.mark.parametrize("misc,what", [
    ("SRL=1-ARG0", "bad SRL entry '1-ARG0'"),
    ("SRL=x:B-ARG0", "bad SRL entry 'x:B-ARG0'"),
    ("SRL=1:ARG0", "bad SRL entry '1:ARG0'"),
    ("SRL=2:B-ARG0", "refers to word 2, which has no Pred= entry"),
    ("SRL=7:B-ARG0", "refers to word 7, which has no Pred= entry"),
])
def test_bad_srl_entries_name_file_and_line(misc, what):
    s = _sentence("Pred=Y", misc)
    with pytest.raises(InputError) as e:
        srl_tags(s, "f.conllu")
    assert e.value.line == 3 and what in e.value.message


def test_frames_with_bioes_tags_and_multiword_v():
    s = _sentence("SRL=3:S-ARG0", "SRL=3:B-V", "Pred=give_up.01|SRL=3:E-V", "SRL=3:B-ARG1", "SRL=3:E-ARG1")
    assert frames_from_misc(s) == [Frame(2, "give_up", "give_up.01", [(0, 1, "ARG0"), (1, 3, "V"), (3, 5, "ARG1")])]
    frames_to_misc(s, frames_from_misc(s))   # written back as BIO
    assert [w[MISC] for w in s.words] == ["SRL=3:B-ARG0", "SRL=3:B-V", "Pred=give_up.01|SRL=3:I-V",
                                          "SRL=3:B-ARG1", "SRL=3:I-ARG1"]
