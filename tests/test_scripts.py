"""The script check looks at the first SAMPLE letters of an input and no further."""
from nlpipe.io.scripts import SAMPLE, ScriptCheck


def test_only_the_first_sample_letters_count():
    check = ScriptCheck("en", "a.txt")
    # 500 Latin letters, then Greek: the Greek lies past the sample
    assert check.feed("a" * SAMPLE + " " + "γ" * 5000) is None
    assert check.done and check.finish() is None


def test_a_mixed_first_sample_is_judged_on_its_own_letters():
    check = ScriptCheck("en", "a.txt")
    # 200 Latin and 300 Greek letters fill the sample; the Latin letters after them do not count
    warning = check.feed("b" * 200 + " 1,2. " + "δ" * 300 + "c" * 10000)
    assert warning == ("a.txt: 60% of the letters are Greek, but the models are for 'en', written in Latin "
                       "script; give models of the text's language (--model, --models)")
    assert check.feed("δ" * 1000) is None


def test_a_sample_filled_over_several_feeds():
    check = ScriptCheck("en", "a.txt")
    assert check.feed("ж" * (SAMPLE - 1)) is None and not check.done
    assert check.feed("ж") is not None and check.done


def test_a_short_input_is_judged_at_its_end():
    check = ScriptCheck("en", "a.txt")
    assert check.feed("ж" * 30) is None
    assert "100% of the letters are Cyrillic" in check.finish()
    short = ScriptCheck("en", "b.txt")
    assert short.feed("ж" * 10) is None and short.finish() is None   # fewer than MIN_LETTERS
