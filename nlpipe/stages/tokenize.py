"""The tokenize stage: raw text -> CoNLL-U sentences, by a trained character model or by rules.

Input is read paragraph by paragraph (a paragraph ends at a blank line and always ends a sentence),
so memory is bounded by the longest paragraph. Output follows EWT: ``# newdoc`` at the start of a
file, ``# newpar`` at each paragraph, ``# sent_id = <base name>-<n>``, ``# text`` with the sentence's
characters (line breaks inside a paragraph become spaces), ``SpaceAfter=No`` in MISC (on the range
line of a multiword token) and every other column ``_``.

Two segmenters share that output code (:class:`Tokenizer`): :class:`RuleTokenizer` (Punkt sentences
+ Treebank-style words, ``punkt-treebank.v1``) and :class:`TrainedTokenizer` (a character CNN that
labels every character as inside a token, token end or sentence end, seeing the rule tokenizer's
token and sentence ends as input features, plus multiword-token expansion learned from the training
data; ``char-segmenter.v1``). Training: :mod:`nlpipe.train.tokenize` and :mod:`nlpipe.train.punkt`.
"""
from __future__ import annotations

import collections
import io
import os
import re
from pathlib import Path
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import MISC, Sentence, misc_prob
from nlpipe.io.inputs import content_lines
from nlpipe.errors import ModelError
from nlpipe.io.model_dir import read_arrays, read_json
from nlpipe.models.rules_tokenizer import SentenceSplitter, Token, WordTokenizer

# Line-break characters other tools may split lines on; they must not appear in a `# text` comment.
_LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})

# One sentence of a paragraph: (start, end, tokens); offsets index the paragraph text. A trained
# tokenizer with ``probs`` adds a fourth item: the probability that the sentence ends there.
SentenceSpan = Tuple[Any, ...]


# How raw text is cut (``--input``): ``raw`` finds sentences and tokens; ``sentences`` takes each line
# as one sentence and finds its tokens; ``tokens`` takes each line as one sentence of space-separated
# tokens, as they are (no multiword tokens). In every mode a blank line starts a paragraph.
TEXT_MODES = ("raw", "sentences", "tokens")


class Tokenizer:
    """Tokenizer stage object: ``tokenize(stream, name, mode)`` yields CoNLL-U sentences from raw
    text; ``annotate(sentences)`` gives sentences (a ``# text`` comment is enough) their tokens.

    Subclasses provide :meth:`segment`, which turns paragraph texts into sentence spans.
    """

    name = "tokenize"
    requires: frozenset = frozenset()
    provides = frozenset({"tokens", "sentences"})

    def segment(self, paragraphs: Iterable[str]) -> Iterator[Tuple[str, Iterable[SentenceSpan]]]:
        """(paragraph text, its sentences) for each paragraph, in order."""
        raise NotImplementedError

    def tokenize(self, stream: IO[str], name: str, mode: str = "raw") -> Iterator[Sentence]:
        """Yield the sentences of a raw-text stream, cut as ``mode`` says (:data:`TEXT_MODES`);
        ``name`` is used in messages and sent_ids."""
        if mode == "tokens" and not isinstance(self, SpaceTokenizer):
            return SpaceTokenizer().tokenize(stream, name, "sentences")
        if mode not in TEXT_MODES:
            raise ValueError(f"unknown text input mode {mode!r} (expected one of {', '.join(TEXT_MODES)})")
        return self._sentences(stream, name, mode)

    def _sentences(self, stream: IO[str], name: str, mode: str) -> Iterator[Sentence]:
        doc = _doc_name(name)
        n = 0
        if mode == "raw":
            units = self._paragraph_units(stream, name)
        else:
            units = self._lines_as_sentences(_lines(stream, name))
        for text, spans, new_paragraph in units:
            first = new_paragraph
            for start, end, tokens, *end_prob in spans:
                n += 1
                comments = []
                if n == 1:
                    comments.append("# newdoc")
                if first:
                    comments.append("# newpar")
                    first = False
                comments.append(f"# sent_id = {doc}-{n}")
                comments.append("# text = " + text[start:end].translate(_LINE_BREAKS))
                rows = _rows(text, tokens)
                if end_prob:
                    last = _last_token_row(rows)
                    last[MISC] = misc_prob(last[MISC], "SentEndProb", end_prob[0])
                yield Sentence(comments, rows)

    def _paragraph_units(self, stream: IO[str], name: str) -> Iterator[Tuple[str, Iterable[SentenceSpan], bool]]:
        """``(text, its sentences, starts a paragraph)`` of raw text: here one unit per paragraph."""
        return ((text, spans, True) for text, spans in self.segment(_paragraphs(stream, name)))

    def _lines_as_sentences(self, lines: Iterable[Tuple[str, bool]]
                            ) -> Iterator[Tuple[str, List[SentenceSpan], bool]]:
        """``(line, [its one sentence], starts a paragraph)`` for ``(line, starts a paragraph)``:
        the line is segmented as a paragraph and its sentences joined into one."""
        starts: "collections.deque[bool]" = collections.deque()

        def texts() -> Iterator[str]:
            for line, new_paragraph in lines:
                starts.append(new_paragraph)
                yield line

        for text, spans in self.segment(texts()):
            tokens = [t for span in spans for t in span[2]]
            yield text, ([(tokens[0][0], tokens[-1][1], tokens)] if tokens else []), starts.popleft()

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        """Give each sentence the tokens of its text (its ``# text``, else its tokens' forms and
        SpaceAfter): sentence boundaries and comments stay, every token row is new (a sentence
        without a ``# text`` gets one)."""
        pending: "collections.deque[Sentence]" = collections.deque()

        def texts() -> Iterator[Tuple[str, bool]]:
            for s in sentences:
                pending.append(s)
                yield s.text.translate(_LINE_BREAKS), False

        for text, spans, _ in self._lines_as_sentences(texts()):
            s = pending.popleft()
            if s.meta("text") is None:
                s.set_meta("text", text)
            s.rows[:] = _rows(text, spans[0][2]) if spans else []
            s.invalidate()
            yield s

    def tokenize_text(self, text: str, name: str = "<string>", mode: str = "raw") -> List[Sentence]:
        """All sentences of a string (for tests and library use)."""
        return list(self.tokenize(io.StringIO(text, newline="\n"), name, mode))


class SpaceTokenizer(Tokenizer):
    """Text already tokenized: a token is what lies between white space (``--input tokens``)."""

    def segment(self, paragraphs: Iterable[str]) -> Iterator[Tuple[str, Iterable[SentenceSpan]]]:
        for text in paragraphs:
            tokens: List[Token] = [(m.start(), m.end(), None) for m in _NON_SPACE.finditer(text)]
            yield text, ([(tokens[0][0], tokens[-1][1], tokens)] if tokens else [])


_NON_SPACE = re.compile(r"\S+")


def _last_token_row(rows: List[List[str]]) -> List[str]:
    """The row of the last token: its multiword range line, if it has one (MISC of a token goes there)."""
    last = rows[-1]
    for r in reversed(rows):
        if "-" in r[0]:
            return r if r[0].split("-")[1] == last[0] else last
    return last


def _rows(text: str, tokens: Sequence[Token]) -> List[List[str]]:
    rows: List[List[str]] = []
    i = 1
    last = len(text)
    for s, e, pieces in tokens:
        misc = "SpaceAfter=No" if e < last and not text[e].isspace() else "_"
        if pieces is None:
            rows.append([str(i), text[s:e], "_", "_", "_", "_", "_", "_", "_", misc])
            i += 1
            continue
        j = i + len(pieces) - 1
        rows.append([f"{i}-{j}", text[s:e], "_", "_", "_", "_", "_", "_", "_", misc])
        for p in pieces:
            rows.append([str(i), p, "_", "_", "_", "_", "_", "_", "_", "_"])
            i += 1
    return rows


class RuleTokenizer(Tokenizer):
    """Punkt sentence boundaries and EWT-style word rules (no trained model)."""

    def __init__(self, sentences: SentenceSplitter, words: WordTokenizer):
        self.sentences = sentences
        self.words = words

    # A paragraph (lines up to a blank line) longer than this many characters is read in pieces cut
    # at line ends: the sentences of a piece but its last are given out, the last goes on into the next
    # piece. Sentence ends are the same as in the whole paragraph (Punkt and the extra rules look a
    # token or two around a boundary) and memory stays bounded in a text without blank lines. A single
    # line is held whole (up to nlpipe.io.inputs.MAX_LINE).
    MAX_PARAGRAPH = 1 << 20

    def segment(self, paragraphs: Iterable[str]) -> Iterator[Tuple[str, Iterable[SentenceSpan]]]:
        for text in paragraphs:
            yield text, self._spans(text, self.sentences.bounds(text))

    def _spans(self, text: str, bounds: Iterable[Tuple[int, int]]) -> Iterator[SentenceSpan]:
        return ((s, e, self.words.tokens(text, s, e)) for s, e in bounds)

    def _paragraph_units(self, stream: IO[str], name: str) -> Iterator[Tuple[str, Iterable[SentenceSpan], bool]]:
        carry = ""  # the paragraph's last sentence so far, not given out yet
        new = False
        for piece, starts, ends in _paragraph_pieces(stream, name, self.MAX_PARAGRAPH):
            new = new or starts
            text = carry + "\n" + piece if carry and piece else carry or piece
            bounds = self.sentences.bounds(text)
            carry = ""
            if not ends and bounds:
                last = bounds.pop()[0]
                carry, text = text[last:], text[:last]
            if bounds:
                yield text, self._spans(text, bounds), new
                new = False


def _doc_name(name: str) -> str:
    if name in ("-", ""):
        return "stdin"
    if name.startswith("<") and name.endswith(">"):  # "<stdin>", "<string>"
        name = name[1:-1]
    base = os.path.basename(name)
    stem = os.path.splitext(base)[0] or base
    return "_".join(stem.split()) or "doc"


def _lines(stream: IO[str], name: str) -> Iterator[Tuple[str, bool]]:
    """``(line, whether it starts a paragraph)`` for every line that is not blank."""
    new_paragraph = True
    for _, line in content_lines(stream, name):
        if not line or line.isspace():
            new_paragraph = True
            continue
        yield line, new_paragraph
        new_paragraph = False


def _paragraphs(stream: IO[str], name: str) -> Iterator[str]:
    """Paragraph texts (lines joined by newlines); blank or whitespace-only lines separate them."""
    return (text for text, _, _ in _paragraph_pieces(stream, name))


def _paragraph_pieces(stream: IO[str], name: str, cap: Optional[int] = None) -> Iterator[Tuple[str, bool, bool]]:
    """``(text, starts a paragraph, ends it)`` of :func:`_paragraphs`, a paragraph longer than ``cap``
    characters in pieces cut at line ends (joined again by a newline, a piece is its paragraph's text)."""
    lines: List[str] = []
    size = 0
    starts = True
    for _, line in content_lines(stream, name):
        if not line or line.isspace():
            if lines or not starts:
                yield "\n".join(lines), starts, True
                lines, size, starts = [], 0, True
            continue
        lines.append(line)
        size += len(line) + 1
        if cap is not None and size > cap:
            yield "\n".join(lines), starts, False
            lines, size, starts = [], 0, False
    if lines or not starts:
        yield "\n".join(lines), starts, True


def rule_features(words: Dict[str, Any], punkt: Optional[Dict[str, Any]] = None) -> Any:
    """The rule-tokenizer input feature of a trained model (word rules, optionally Punkt sentences)."""
    from nlpipe.models.segmenter import RuleFeatures

    sentences = SentenceSplitter(punkt, words.get("sentence_closers", [])) if punkt is not None else None
    return RuleFeatures(WordTokenizer.from_params(words), sentences)


def load_rules(model_dir: Path, config: Dict[str, Any], **options: Any) -> RuleTokenizer:
    """Load a ``punkt-treebank.v1`` model: Punkt parameters and word rules as JSON files."""
    files = config.get("model", {})
    punkt = read_json(Path(model_dir) / files.get("punkt", "punkt.json"))
    words = read_json(Path(model_dir) / files.get("words", "words.json"))
    try:
        splitter = SentenceSplitter(punkt, words.get("sentence_closers", []))
        tokenizer = WordTokenizer.from_params(words)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ModelError(f"{model_dir}: corrupt tokenizer parameters ({type(e).__name__}: {e})") from None
    return RuleTokenizer(splitter, tokenizer)


# ---------------------------------------------------------------------------------------------
# The trained character segmenter

WEIGHTS = "weights.npz"
CHARS = "chars.json"
SPACE_JOINS = "space_joins.json"
MULTIWORDS = "multiwords.json"
RULES = "rules.json"
PUNKT = "punkt.json"


class TrainedTokenizer(Tokenizer):
    """Token, sentence and multiword-token segmentation by a character CNN (numpy inference).

    Paragraphs are scored in batches of about :attr:`BATCH_CHARS` characters (one matrix product
    per layer for many short paragraphs), so output comes a batch at a time. A token ends where the
    model says so, and always before whitespace; never inside a combining sequence. A sentence ends
    where the sentence-end score beats the token-end score by more than ``threshold`` (tuned on dev),
    and always at the end of a paragraph. ``rules`` (a
    :class:`~nlpipe.models.segmenter.RuleFeatures`) gives the rule tokenizer's decisions as input,
    ``joins`` (a :class:`~nlpipe.models.space_joins.SpaceJoins`) the counts of spaces inside tokens.
    With ``spaces`` (a model trained on tokens that contain a space, French ``500 000``) a single plain
    space between two non-space characters ends the token before it only where the model says so.
    ``probs``: each sentence of raw text (not of a paragraph cut in windows) also gets MISC
    ``SentEndProb`` on its last token (see :meth:`end_probs`).
    """

    BATCH_CHARS = 16384
    # A paragraph longer than LONG_CHARS (one huge line) is cut in windows of that many characters,
    # each seeing CONTEXT characters before and after the part whose sentences it gives, so memory
    # stays bounded and the result is that of the whole paragraph (the model and the rule features
    # look no further than a few dozen characters). Only a sentence longer than a window is cut.
    LONG_CHARS = 1 << 16
    CONTEXT = 1024

    def __init__(self, net: Any, vocab: Any, multiwords: Any, rules: Any = None,
                 threshold: float = 0.0, spaces: bool = False, probs: bool = False, joins: Any = None):
        self.probs = probs
        self.joins = joins
        self.net = net
        self.vocab = vocab
        self.multiwords = multiwords
        self.rules = rules
        self.threshold = threshold
        self.spaces = spaces

    def segment(self, paragraphs: Iterable[str]) -> Iterator[Tuple[str, Iterable[SentenceSpan]]]:
        batch: List[str] = []
        size = 0
        for text in paragraphs:
            if len(text) > self.LONG_CHARS:
                if batch:
                    yield from self._segment_batch(batch)
                    batch, size = [], 0
                yield text, self._segment_long(text)
                continue
            batch.append(text)
            size += len(text)
            if size >= self.BATCH_CHARS:
                yield from self._segment_batch(batch)
                batch, size = [], 0
        if batch:
            yield from self._segment_batch(batch)

    def end_probs(self, scores: np.ndarray, forced: np.ndarray) -> np.ndarray:
        """Probabilities [n] that a sentence ends at n token ends, from their character scores [n, 3]
        (inside, token end, sentence end): P(sentence end | token end), with the tuned threshold as a
        bias, so that it is above 0.5 exactly where the model ends a sentence; 1 where the end is
        ``forced`` [n] (the end of a paragraph)."""
        p = 1.0 / (1.0 + np.exp(-(scores[:, 2] - scores[:, 1] - self.threshold).astype(np.float64)))
        return np.where(forced, 1.0, p)

    def _segment_long(self, text: str) -> Iterator[SentenceSpan]:
        """The sentences of one long paragraph, window by window (see :attr:`LONG_CHARS`)."""
        pos = 0  # the next sentence starts at the first token from here on
        cut = False  # the last window ended inside a token: the next one starts right there
        while pos < len(text):
            a = pos if cut else max(0, pos - self.CONTEXT)
            b = min(len(text), pos + self.LONG_CHARS + self.CONTEXT)
            (_, spans), = self._segment_batch([text[a:b]])
            limit = len(text) if b == len(text) else b - self.CONTEXT  # later sentences: next window
            tokens: List[Token] = []
            ends: List[bool] = []  # whether each token ends a sentence
            for span in spans:
                sentence = span[2]
                for k, (x, y, pieces) in enumerate(sentence):
                    if x + a >= pos:
                        tokens.append((x + a, y + a, pieces))
                        ends.append(k == len(sentence) - 1)
            done = [k for k, (_, y, _) in enumerate(tokens) if ends[k] and y <= limit]
            if done:
                keep = done[-1] + 1
            else:  # a sentence longer than a window is cut at its last whole token in it
                keep = sum(1 for _, y, _ in tokens if y <= limit) or min(1, len(tokens))
            cut = not done and keep > 0 and tokens[keep - 1][1] > limit
            if keep == 0:  # only white space up to the limit
                pos = limit
                continue
            ends[keep - 1] = True
            first = 0
            for k in range(keep):
                if ends[k]:
                    yield tokens[first][0], tokens[k][1], tokens[first:k + 1]
                    first = k + 1
            pos = tokens[keep - 1][1]

    def _segment_batch(self, texts: List[str]) -> Iterator[Tuple[str, List[SentenceSpan]]]:
        """Score a batch of paragraphs in one stream (a PAD gap between paragraphs) and cut it."""
        from nlpipe.models.segmenter import PAD, SPACE

        gap = self.net.gap
        lengths = np.array([len(t) for t in texts], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths + gap)[:-1]])      # paragraph starts in the stream
        size = int(lengths.sum()) + gap * len(texts)
        where = np.arange(int(lengths.sum())) + np.repeat(np.arange(len(texts)) * gap, lengths)
        char_ids, char_glue = self.vocab.encode("".join(texts))
        ids = np.full(size, PAD, dtype=np.int32)
        ids[where] = char_ids
        glue = np.zeros(size, dtype=bool)
        glue[where] = char_glue
        bits = None
        if self.rules is not None:
            bits = np.zeros(size, dtype=np.int32)
            bits[where] = np.concatenate([self.rules(t) for t in texts])
        lex = None
        if self.joins is not None:
            lex = np.zeros(size, dtype=np.int32)
            lex[where] = np.concatenate([self.joins.values(t) for t in texts])
        sc = self.net.scores(ids, bits, lex)

        space = (ids == SPACE) | (ids == PAD)
        next_space = np.ones(size, dtype=bool)
        next_space[:-1] = space[1:]
        may_split = np.ones(size, dtype=bool)
        may_split[:-1] = ~glue[1:]
        split = np.maximum(sc[:, 1], sc[:, 2]) > sc[:, 0]
        if self.spaces:
            # a plain space between two non-space characters may lie inside a token ("500 000")
            plain = np.zeros(size, dtype=bool)
            plain[where] = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype="<u4") == 0x20
            bridge = plain.copy()
            bridge[1:] &= ~space[:-1]
            bridge[:-1] &= ~space[1:]
            next_space[:-1] &= ~bridge[1:]
            tok_end = ~space & (next_space | (split & may_split))
            inside = bridge.copy()
            inside[1:] &= ~tok_end[:-1]
            space_between = space & ~inside
        else:
            tok_end = ~space & (next_space | (split & may_split))
            space_between = space
        sent_end = tok_end & (sc[:, 2] - sc[:, 1] > self.threshold)
        # the last character of each non-blank paragraph ends a sentence
        real = np.flatnonzero(~space)
        last = np.searchsorted(real, offsets + lengths) - 1
        last = last[last >= 0]
        sent_end[real[last]] = True
        paragraph_end = np.zeros(size, dtype=bool)
        paragraph_end[real[last]] = True
        after_boundary = np.ones(size, dtype=bool)
        after_boundary[1:] = space_between[:-1] | tok_end[:-1]
        starts = np.flatnonzero(~space & after_boundary)
        end_at = np.flatnonzero(tok_end)
        para = np.searchsorted(offsets, starts, side="right") - 1          # paragraph of each token
        base = offsets[para]
        first_token = np.searchsorted(starts, offsets).tolist() + [len(starts)]
        starts_rel = (starts - base).tolist()
        ends_rel = (end_at + 1 - base).tolist()
        sentence_ends = np.flatnonzero(sent_end[end_at]).tolist()
        end_p = self.end_probs(sc[end_at[sentence_ends]], paragraph_end[end_at[sentence_ends]]).tolist() \
            if self.probs else None
        expand = self.multiwords
        j = 0
        for p, text in enumerate(texts):
            out: List[SentenceSpan] = []
            k, stop = first_token[p], first_token[p + 1]
            while j < len(sentence_ends) and sentence_ends[j] < stop:
                e = sentence_ends[j] + 1
                spans = list(zip(starts_rel[k:e], ends_rel[k:e]))
                words = expand.sentence([text[a:b] for a, b in spans])
                tokens = [(a, b, w) for (a, b), w in zip(spans, words)]
                out.append((starts_rel[k], ends_rel[e - 1], tokens) if end_p is None
                           else (starts_rel[k], ends_rel[e - 1], tokens, end_p[j]))
                k = e
                j += 1
            yield text, out


def load_trained(model_dir: Path, config: Dict[str, Any], **options: Any) -> TrainedTokenizer:
    """Load a ``char-segmenter.v1`` model: weights.npz, chars.json and multiwords.json (and the rule
    tokenizer's and the space joins' JSON where the model has them)."""
    from nlpipe.models.multiword import MultiwordExpander
    from nlpipe.models.segmenter import CharVocab
    from nlpipe.models.segmenter_numpy import SegmenterInference
    from nlpipe.models.space_joins import N_VALUES as JOIN_VALUES, SpaceJoins

    model_dir = Path(model_dir)
    hyper = config.get("model", {})
    params = read_arrays(model_dir / WEIGHTS)
    multiwords = read_json(model_dir / MULTIWORDS)
    punkt = read_json(model_dir / hyper["punkt"]) if hyper.get("rules") and hyper.get("punkt") else None
    rule_params = read_json(model_dir / hyper["rules"]) if hyper.get("rules") else None
    join_counts = read_json(model_dir / hyper["space_joins"]) if hyper.get("space_joins") else None
    try:
        vocab = CharVocab(read_json(model_dir / CHARS))
        net = SegmenterInference(params, hyper["dilations"])
        if net.emb.shape[0] != len(vocab):
            raise ValueError(f"{net.emb.shape[0]} character embeddings for {len(vocab)} characters")
        threshold = float(hyper.get("threshold", 0.0))
        spaces = bool(hyper.get("spaces_in_tokens", False))
        rules = None
        if rule_params is not None:
            rules = rule_features(rule_params, punkt)
        if (0 if rules is None else rules.n_values) != (0 if net.rule is None else net.rule.shape[0]):
            raise ValueError("the rule feature's weights and parameters do not go together")
        joins = SpaceJoins.from_json(join_counts) if join_counts is not None else None
        if (0 if joins is None else JOIN_VALUES) != (0 if net.lex is None else net.lex.shape[0]):
            raise ValueError("the space joins' weights and counts do not go together")
        if not isinstance(multiwords, dict):
            raise ValueError("multiwords.json holds no object")
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        raise ModelError(f"{model_dir}: corrupt segmenter model ({type(e).__name__}: {e})") from None
    return TrainedTokenizer(net, vocab, MultiwordExpander(multiwords, english=config.get("language") == "en"),
                            rules, threshold, spaces, probs=bool(options.get("probs")), joins=joins)
