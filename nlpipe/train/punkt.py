"""Train the rule tokenizer (``punkt-treebank.v1``: ``nlpipe train tokenize --method rules``).

Learns, from the gold tokenization of the training file only:
- Punkt sentence parameters (nltk PunktTrainer on the raw paragraphs rebuilt from ``# text``),
  plus the abbreviations below as Punkt abbreviation types;
- abbreviations that keep their period (``Dr.``, ``etc.``): forms written with the period attached
  more often than split from it inside a sentence (at its end EWT always splits the period off);
- hyphen prefixes kept attached (``e-mail``, ``non-profit``): first parts kept whole more often
  than split;
- unit suffixes split from numbers (``5pm`` -> ``5 pm``) more often than kept (``5th``);
- words that close a letter with a comma and end a sentence (``Thanks,`` ``Regards,``);
- apostrophe-less multiword tokens (``dont`` -> ``do nt``, ``cannot`` -> ``can not``) split more
  often than not;
- whether digit groups written with a space (French ``500 000``) are one token more often than not;
- elisions split off the next word (French ``l'``, ``qu'``) seen twice and more often split than
  inside a token;
- whether hyphenated words are kept whole more often than split at the hyphen, and then the endings
  split off with their hyphen (``-il``, ``-t-il``) more often than they end a whole token;
- whether bracketed endings (``traité(e)``) stay in their word more often than not;
- forms the rules above would split that the treebank keeps whole at least twice and more often than
  it splits them (``l'on``, ``°C``).

Only an English model (``lang`` "en") adds the hand-written English seeds below and keeps the English
clitic rules of :class:`nlpipe.models.rules_tokenizer.WordTokenizer` (``english`` in words.json);
a model of any other language holds only what its training data show.

The scores are measured after training (``nlpipe eval tokenize``) and recorded with ``scores``.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from nlpipe.io.conllu import FORM, MISC, Sentence, misc_get, read_file
from nlpipe.io.model_dir import UNDETERMINED, builds_model, write_config, write_json
from nlpipe.io.provenance import training_block
from nlpipe.models.rules_tokenizer import WordTokenizer, punkt_module, punkt_to_json

# Hand-written English knowledge, used where the training data is too thin (a word seen once):
# title and calendar abbreviations, and prefixes that EWT attaches with a hyphen when it keeps them whole.
SEED_ABBREVIATIONS = (
    "adm capt cmdr col cpl dept dr gen gov hon jr lt maj messrs mr mrs ms mt prof rep reps rev sen sgt sr st "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun "
    "inc ltd co corp bros assn est approx vs etc e.g i.e a.m p.m u.s u.k u.n"
).split()
KNOWN_PREFIXES = frozenset(
    "anti co counter cross e ex extra inter intra mid mis multi neo non over post pre pro pseudo re semi "
    "socio sub super trans ultra un vice".split())

_ABBR_BODY = re.compile(r"\w+(?:\.\w+)*$")
_NUMBER = re.compile(r"\d[\d.,:]*$")
_NUMBER_UNIT = re.compile(r"\d[\d.,:]*([^\W\d_]+)$")
_HYPHEN_WORD = re.compile(r"([^\W\d_]+)-[^\W\d_]+$")
_SPACED_NUMBER = re.compile(r"\d{1,3}(?: \d{3})+(?:,\d+)?$")
_GROUP = re.compile(r"\d{3}(?:,\d+)?$")
_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+$")
_HYPHEN_SUFFIX = re.compile(r"-[^\W\d_]+(?:-[^\W\d_]+)*$")
_PAREN_WORD = re.compile(r"[^\W\d_]+\([^\W\d_]{1,3}\)[^\W\d_]*$")
_SHORT_WORD = re.compile(r"[^\W\d_]{1,3}$")
_APOSTROPHE = re.compile(r"['’]")


def paragraphs(sentences: List[Sentence]) -> Iterator[str]:
    """Raw paragraphs: the ``# text`` of a paragraph's sentences joined by one space."""
    current: List[str] = []
    for s in sentences:
        # not Sentence.meta: EWT writes "# newpar id = ...", whose key is "newpar id"
        if current and any(c.startswith(("# newdoc", "# newpar")) for c in s.comments):
            yield " ".join(current)
            current = []
        current.append(s.text())
    if current:
        yield " ".join(current)


def surface(s: Sentence) -> List[Tuple[str, bool, List[str]]]:
    """(form, space after, word forms) of each surface token."""
    out = []
    words = {r[0]: r[FORM] for r in s.words}
    for t in s.tokens:
        space = misc_get(t[MISC], "SpaceAfter") != "No"
        a, dash, b = t[0].partition("-")
        pieces = [words[str(i)] for i in range(int(a), int(b) + 1)] if dash else []
        out.append((t[FORM], space, pieces))
    return out


def learn_words(sentences: List[Sentence], lang: str = UNDETERMINED) -> Dict[str, Any]:
    """The word rules of words.json learned from gold sentences (English seeds only for ``lang`` "en")."""
    english = lang == "en"
    attached: Counter = Counter()
    detached: Counter = Counter()
    kept: Counter = Counter()
    split: Counter = Counter()
    mwt: Counter = Counter()
    closer: Counter = Counter()
    unit_split: Counter = Counter()
    unit_kept: Counter = Counter()
    lower_seen = set()
    comma_mid: Counter = Counter()
    joined: Counter = Counter()
    joined_lengths: Dict[str, List[int]] = {}
    plain: Counter = Counter()
    lengths: Dict[str, List[int]] = {}
    spaced = [0, 0]   # digit groups written with a space: kept in one token, split into tokens
    hyphenated = [0, 0]   # alphabetic hyphenated words: kept whole, split at a hyphen
    paren = [0, 0]        # bracketed endings: kept in their word, split off
    elided: Counter = Counter()
    elision_inside: Counter = Counter()
    suffix_split: Counter = Counter()
    suffix_inside: Counter = Counter()
    for s in sentences:
        toks = surface(s)
        for i, (form, space, pieces) in enumerate(toks):
            low = form.lower()
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            glued = nxt is not None and not space       # the next token follows without a space
            apos = _APOSTROPHE.search(low)
            if apos:
                prefix = low[:apos.end() - 1] + "'"
                if apos.end() == len(low) and low[:-1].isalpha() and glued and nxt[0][:1].isalpha():
                    elided[prefix] += 1
                elif 0 < apos.start() and apos.end() < len(low):
                    elision_inside[prefix] += 1
            if _HYPHENATED.match(form):
                hyphenated[0] += 1
                for k, ch in enumerate(low):
                    if ch == "-":
                        suffix_inside[low[k:]] += 1
            if glued and form[-1:].isalpha():
                if _HYPHEN_SUFFIX.match(nxt[0]):
                    suffix_split[nxt[0].lower()] += 1
                    hyphenated[1] += 1
                elif nxt[0] == "-" and i + 2 < len(toks) and not nxt[1] and toks[i + 2][0][:1].isalpha():
                    hyphenated[1] += 1
            if _PAREN_WORD.match(form):
                paren[0] += 1
            if glued and form.isalpha() and nxt[0] == "(" and not nxt[1] and i + 3 < len(toks) \
                    and _SHORT_WORD.match(toks[i + 2][0]) and not toks[i + 2][1] and toks[i + 3][0] == ")":
                paren[1] += 1
            if len(form) > 1 and form.endswith(".") and _ABBR_BODY.match(form[:-1]):
                attached[low[:-1]] += 1
            if nxt and not space and nxt[0] == "." and _ABBR_BODY.match(form) and i + 2 < len(toks):
                detached[low] += 1
            m = _HYPHEN_WORD.match(form)
            if m:
                kept[m.group(1).lower()] += 1
            if nxt and not space and nxt[0] == "-" and not nxt[1] and i + 2 < len(toks) \
                    and form.isalpha() and toks[i + 2][0][:1].isalpha():
                split[low] += 1
            if nxt and not space and form.isalpha() and nxt[0].isalpha() and not pieces and not nxt[2]:
                key = (form + nxt[0]).lower()
                joined[key] += 1
                joined_lengths[key] = [len(form), len(nxt[0])]
            m = _NUMBER_UNIT.match(form)
            if m:
                unit_kept[m.group(1).lower()] += 1
            if nxt and not space and _NUMBER.match(form) and nxt[0].isalpha() and not nxt[2]:
                unit_split[nxt[0].lower()] += 1
            if form.islower():
                lower_seen.add(form)
            if _SPACED_NUMBER.match(form):
                spaced[0] += 1
            if nxt and space and form.isdigit() and len(form) <= 3 and _GROUP.match(nxt[0]):
                spaced[1] += 1
            if nxt and nxt[0] == "," and form.isalpha():
                (closer if i + 2 == len(toks) else comma_mid)[low] += 1
            if pieces:
                if "".join(pieces).lower() == low and "'" not in form and "’" not in form:
                    mwt[low] += 1
                    lengths[low] = [len(p) for p in pieces]
            else:
                plain[low] += 1
    words: Dict[str, Any] = {
        "abbreviations": sorted({w for w, n in attached.items() if n > detached[w]}
                                | {w for w in SEED_ABBREVIATIONS if english and attached[w] >= detached[w]}),
        "hyphen_prefixes": sorted(w for w, n in kept.items()
                                  if n > split[w] and (n >= 2 or (english and w in KNOWN_PREFIXES))),
        "splits": {w: lengths[w] for w, n in sorted(mwt.items()) if n >= 3 and n > plain[w]},
        "sentence_closers": sorted(w for w, n in closer.items() 
                                   if n >= 4 and n > 2 * comma_mid[w] and w in lower_seen),
        "units": sorted(w for w, n in unit_split.items() if n >= 2 and n > unit_kept[w]),
        "joined": {w: joined_lengths[w] for w, n in sorted(joined.items()) if n >= 2 and n > plain[w]},
        "english": english,
        "spaced_numbers": spaced[0] > spaced[1],
        "elisions": sorted(w for w, n in elided.items() if n >= 2 and n > elision_inside[w]),
        "hyphen_whole": hyphenated[0] > hyphenated[1],
        "hyphen_suffixes": sorted(w for w, n in suffix_split.items()
                                  if hyphenated[0] > hyphenated[1] and n > suffix_inside[w]),
        "paren_endings": paren[0] > paren[1],
    }
    words["whole"] = kept_whole(sentences, words)
    return words


def kept_whole(sentences: List[Sentence], words: Dict[str, Any]) -> List[str]:
    """Lower-cased surface forms that the rules of ``words`` split but the treebank keeps whole at
    least twice and more often than it writes them as several tokens without spaces."""
    rules = WordTokenizer.from_params({**words, "whole": []})
    whole: Counter = Counter()
    for s in sentences:
        for form, _, _ in surface(s):
            if not form.isalnum() and " " not in form:
                whole[form.lower()] += 1
    # between two words, as in running text (an abbreviation at the end of a text loses its period)
    candidates = {w for w, n in whole.items() if n >= 2 and len(rules.tokens(f"a {w} a")) > 3}
    split: Counter = Counter()
    longest = max(map(len, candidates), default=0)
    for s in sentences:
        toks = surface(s)
        for i in range(len(toks)):
            run = toks[i][0]
            for j in range(i + 1, len(toks)):
                if toks[j - 1][1] or len(run) >= longest:    # a space, or longer than any candidate
                    break
                run += toks[j][0]
                if run.lower() in candidates:
                    split[run.lower()] += 1
    return sorted(w for w in candidates if whole[w] > split[w])


def learn(sentences: List[Sentence], lang: str = UNDETERMINED) -> Tuple[Dict[str, Any], Dict[str, list]]:
    """(word rules, Punkt parameters as JSON) learned from gold sentences."""
    words = learn_words(sentences, lang)
    trainer = punkt_module().PunktTrainer()
    for p in paragraphs(sentences):
        trainer.train(p + "\n\n", finalize=False)
    trainer.finalize_training()
    params = trainer.get_params()
    params.abbrev_types |= set(words["abbreviations"])
    return words, punkt_to_json(params)


@builds_model("out")
def train(train_path: str, out: str, scores: Optional[Dict[str, Any]] = None, lang: str = UNDETERMINED,
          log: Callable[[str], None] = lambda m: None) -> Dict[str, Any]:
    """Learn the rule tokenizer's Punkt parameters and word lists from ``train_path``; write the
    model directory ``out`` (``scores`` measured afterwards, ``{"dev_tokens_f1": 99.5,
    "test_tokens_f1": 99.4, ...}``, are recorded in its config; ``lang``: the training data's
    language code); return what was learned, counted."""
    sentences = list(read_file(train_path))
    words, punkt = learn(sentences, lang)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for fname, obj in (("punkt.json", punkt), ("words.json", words)):
        write_json(out_dir / fname, obj, indent=0, sort_keys=True)
    scores = scores or {}
    dev = {k[4:]: v for k, v in scores.items() if k.startswith("dev_")}
    test = {k[5:]: v for k, v in scores.items() if k.startswith("test_")}
    write_config(out_dir, {
        "stage": "tokenize",
        "arch": "punkt-treebank.v1",
        "language": lang,
        "model": {"punkt": "punkt.json", "words": "words.json"},
        "training": training_block(
            {"train": train_path}, dev, test, sentences=len(sentences),
            evaluation="raw text (# text lines; a paragraph's sentences joined by one space, a blank line at "
                       "# newpar/# newdoc) tokenized, then scored with nlpipe eval tokenize --pred "
                       "(conll18_ud_eval alignment)"),
    })
    log(f"{out_dir}: {len(words['abbreviations'])} abbreviations, {len(words['hyphen_prefixes'])} "
        f"hyphen prefixes, {len(words['splits'])} splits, {len(punkt['abbrev_types'])} Punkt abbreviation types")
    return {"model": str(out_dir), "language": lang, "sentences": len(sentences),
            "punkt_abbreviations": len(punkt["abbrev_types"]),
            **{k: len(v) for k, v in words.items() if not isinstance(v, bool)}}
