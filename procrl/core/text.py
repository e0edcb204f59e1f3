"""Step and sentence segmentation, shared by every reward and by dense credit.

One implementation, one meaning of "step" (docs/spec.md section 0):

* reasoning = the completion minus ``<think>`` tags and minus a trailing answer line
  (``#### N``, ``The answer is N``, ``\\boxed{N}``);
* steps: split the reasoning on blank lines when that gives 2+ pieces, else on single newlines
  when that gives 2+ pieces, else into sentences; ``Step k:`` / ``k.`` prefixes are stripped
  from the scoring text but every span keeps character offsets into the *original completion*
  (dense credit maps those offsets to tokens);
* sentences: spaCy (``en_core_web_sm`` where installed, else ``spacy.blank("en")`` plus the
  rule-based sentencizer), run line by line, with merges for abbreviations and decimals the
  sentencizer would otherwise split.

Cost is linear in the text length and bounded (docs/spec.md section 0, docs/reliability.md): a
completion is segmented only when it has at most :data:`MAX_CHARS` characters, :data:`MAX_LINES`
non-empty lines and :data:`MAX_STEPS` steps and sentences; otherwise its segmentation is empty
and ``too_long`` (the reward mix then gives it every component's fallback, counted as the failure
kind ``too_long``). spaCy sees each line in chunks of at most :data:`SPACY_CHUNK` characters and
with a space in place of every :data:`SPACY_MAX_TOKEN`-th character of a run without spaces
(offsets unchanged): its tokenizer strips affixes one at a time, quadratic in the length of a
token ("((((...", "$$$$..."), and refuses texts over 1M characters.

Everything here is pure text in, spans out; no models.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from procrl.core.config import ConfigError

__all__ = [
    "MAX_CHARS",
    "MAX_LINES",
    "MAX_STEPS",
    "Span",
    "Segmentation",
    "answer_line_start",
    "reasoning_end",
    "segment",
    "segment_batch",
    "split_sentences",
]


@dataclass(frozen=True)
class Span:
    """A piece of a completion: ``text`` is what rewards score (prefix stripped), ``start``/``end``
    are character offsets of the whole piece in the original completion (``end`` exclusive)."""

    text: str
    start: int
    end: int


# Caps of segmentation (documented in docs/reliability.md, "Bounded"): a longer completion is
# ``too_long``. Generous for real reasoning (a 32k-token trace is ~130k characters, a few hundred
# lines), small enough that the whole pipeline stays within seconds per completion.
MAX_CHARS = 1 << 20  # characters of a completion (1 MiB)
MAX_LINES = 8192  # non-empty lines of the reasoning (spaCy runs line by line)
MAX_STEPS = 8192  # steps, and sentences, of the reasoning
SPACY_CHUNK = 10_000  # characters spaCy gets at once (a longer line is cut at a space)
SPACY_MAX_TOKEN = 64  # longest run without spaces spaCy sees


@dataclass(frozen=True)
class Segmentation:
    """Steps and sentences of one completion. ``sentence_step[i]`` is the step index holding
    sentence ``i`` (TRACE turns sentence scores into per-step scores with it). ``too_long``: the
    completion exceeds a cap (:data:`MAX_CHARS`, :data:`MAX_LINES`, :data:`MAX_STEPS`) and was
    not segmented (no steps, no sentences)."""

    completion: str
    reasoning_end: int
    steps: tuple[Span, ...]
    sentences: tuple[Span, ...]
    sentence_step: tuple[int, ...]
    too_long: bool = False

    @property
    def reasoning(self) -> str:
        return _THINK_TAG.sub("", self.completion[: self.reasoning_end]).strip()


# --- answer line -------------------------------------------------------------------------------

_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)
# Markers of a final answer statement; the answer line starts at the sentence holding one.
_ANSWER_MARKER = re.compile(r"####|\\boxed\s*\{|\b(?:the\s+)?(?:final\s+)?answer\s*(?:is\b|:)", re.IGNORECASE)
# A line that is only a bold number ("**18**", "**$1,500**", "**18 eggs.**"): an answer line too.
_BOLD_NUMBER_LINE = re.compile(
    r"[ \t]*\*\*[ \t]*\\?\$?[ \t]*-?[\d.,]*\d[ \t]*[A-Za-z ]{0,20}[.!]?[ \t]*\*\*[ \t]*[.!]?[ \t]*"
)
# A line holding only LaTeX display delimiters: part of the answer block it surrounds.
DISPLAY_DELIMITERS = _DISPLAY_DELIMITERS = re.compile(r"[ \t]*(?:\\\[|\\\]|\$\$|\\\(|\\\))[ \t.]*")
_SENTENCE_END_BEFORE = re.compile(r"[.!?](?=\s)")
# A short lead-in ("So", "Therefore,") before the marker belongs to the answer line.
_LEAD_IN = re.compile(r"^\s*(?:so|thus|hence|therefore|finally|in total|in conclusion|overall)?[\s,:]*$", re.I)


def _mask_think_tags(text: str) -> str:
    """Blank out <think> tags with spaces of equal length so that offsets stay valid."""
    return _THINK_TAG.sub(lambda m: " " * len(m.group(0)), text)


def _answer_in_line(line: str) -> int | None:
    """Offset in ``line`` where its answer statement begins, or None if it has none."""
    if _BOLD_NUMBER_LINE.fullmatch(line):
        return len(line) - len(line.lstrip())
    markers = list(_ANSWER_MARKER.finditer(line))
    if not markers:
        return None
    # The first marker of the last answer sentence ("The answer is \boxed{3}" starts at "The").
    marker = markers[-1]
    for earlier in reversed(markers[:-1]):
        if _SENTENCE_END_BEFORE.search(line, earlier.end(), marker.start()):
            break
        marker = earlier
    sentence_start = 0
    for end in _SENTENCE_END_BEFORE.finditer(line, 0, marker.start()):
        sentence_start = end.end()
    lead_in = line[sentence_start : marker.start()].strip()
    # a lead-in is a few words; matching a long one would backtrack quadratically
    cut = sentence_start if len(lead_in) <= 40 and _LEAD_IN.match(lead_in.strip("*#- \t")) else marker.start()
    while cut < len(line) and line[cut].isspace():
        cut += 1
    return cut


def answer_line_start(text: str) -> int | None:
    """Offset where the trailing answer statement begins, or None if the last line has none.

    Only the end of the text is searched: an answer mentioned mid-reasoning is reasoning. The
    statement is the last non-empty line's answer sentence (``#### N``, ``The answer is N``,
    ``\\boxed{N}``, ``Answer: N``, a bold number alone); lines before it that are answer lines
    as a whole belong to it too (``#### 4`` then ``The answer is: 4``; a chat model repeating
    ``#### 48`` until its token limit), so that none of them counts as a reasoning step.
    """
    stripped_end = len(text.rstrip())
    if stripped_end == 0:
        return None
    line_end = stripped_end
    start = None
    while line_end > 0:
        line_start = text.rfind("\n", 0, line_end) + 1
        line = text[line_start:line_end]
        if _DISPLAY_DELIMITERS.fullmatch(line):  # "\[" / "\]" / "$$" around a boxed answer
            if start is not None:
                start = line_start + len(line) - len(line.lstrip())
            line_end = _previous_line_end(text, line_start)
            continue
        cut = _answer_in_line(line)
        if cut is None:
            break
        start = line_start + cut
        before = text[line_start:start]
        if before.strip() and not _STEP_PREFIX.fullmatch(before) and not _DISPLAY_DELIMITERS.fullmatch(before):
            break  # reasoning before the answer on this line: the block starts here
        start = line_start + len(before) - len(before.lstrip())  # "Step 13: The answer is: 4" whole
        line_end = _previous_line_end(text, line_start)
    return start


def _previous_line_end(text: str, line_start: int) -> int:
    """End of the last non-empty line before ``line_start`` (no copy of the text before it)."""
    line_end = line_start
    while line_end > 0 and text[line_end - 1].isspace():
        line_end -= 1
    return line_end


def reasoning_end(completion: str) -> int:
    """Offset where the reasoning ends (before a trailing answer line), trailing space dropped."""
    masked = _mask_think_tags(completion)
    cut = answer_line_start(masked)
    end = len(masked) if cut is None else cut
    return len(masked[:end].rstrip())


# --- sentences ---------------------------------------------------------------------------------

# Abbreviations after which a period does not end a sentence (lower-cased, without final dot):
# titles and Latin abbreviations ("Dr. Smith", "e.g. The first").
_ABBREVIATIONS = frozenset("e.g i.e approx vs cf mr mrs ms dr prof st".split())
# Units and short words that also end sentences ("He drives 60 km. Then he stops."): the period is
# an abbreviation's only before a number or a lower-case word ("3 ft. x 4 ft.", "No. 5").
_SHORT_WORDS = frozenset(
    "etc no nos fig eq eqs min max hr hrs sec a.m p.m avg est dept inc ltd co jr sr "
    "oz lb lbs ft in yd mi pt qt gal km cm mm kg mg ml sq".split()
)
_ABBREV_AT_END = re.compile(r"(?:^|[\s(])((?:[A-Za-z]\.){1,3}[A-Za-z]?|[A-Za-z]{1,6})\.\s*$")


# Which sentence splitter segmentation uses, for this process: "rules" (procrl's own, pure Python,
# the default everywhere) or "spacy" (spaCy's sentencizer, or its ``en_core_web_sm`` parser where
# installed; the ``spacy`` extra). A recipe's ``segmentation:`` key chooses; nothing switches on what
# happens to be installed, so one completion gets the same steps on every machine.
SENTENCE_SPLITTERS = ("rules", "spacy")
_splitter = "rules"


def use_sentence_splitter(name: str) -> None:
    """Make ``name`` (one of :data:`SENTENCE_SPLITTERS`) the sentence splitter of this process.

    Raises :class:`~procrl.core.config.ConfigError` (one line naming what is missing) when it cannot
    run here, before anything is segmented with it: a segmenter that cannot run is never an empty
    segmentation."""
    global _splitter
    if name not in SENTENCE_SPLITTERS:
        raise ConfigError(f"segmentation: unknown sentence splitter {name!r}; choose one of {list(SENTENCE_SPLITTERS)}")
    previous, _splitter = _splitter, name
    try:
        check_segmentation()
    except ConfigError:
        _splitter = previous
        raise


def sentence_splitter() -> str:
    """The sentence splitter this process segments with (:func:`use_sentence_splitter`)."""
    return _splitter


# Two sentences on one line and two lines: what any working splitter gives (checked before scoring).
_CHECK_TEXT = "Natalia sold 48 clips in April. She sold half as many in May.\nSo she sold 48 + 24 = 72 clips.\n#### 72"


def check_segmentation() -> None:
    """Segment a fixed two-step text and raise a one-line :class:`~procrl.core.config.ConfigError` if
    the segmenter raises or finds other than its two steps and three sentences. Reward mixes call
    this before scoring, so a missing or broken segmenter stops a command in one line instead of
    scoring every completion as having no steps."""
    try:
        found = segment(_CHECK_TEXT)
        counts = (len(found.steps), len(found.sentences))
    except Exception as error:  # the splitter's own failure, named in one line
        missing = f" (install it: pip install 'procrl[{_splitter}]')" if isinstance(error, ImportError) else ""
        detail = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        raise ConfigError(f"segmentation: the {_splitter!r} sentence splitter cannot run: {detail}{missing}") from None
    if counts != (2, 3):
        raise ConfigError(
            f"segmentation: the {_splitter!r} sentence splitter found {counts[0]} steps and {counts[1]} sentences "
            "in a two-step, three-sentence check text; it is not working"
        )


def _import_spacy():
    """``import spacy``, without letting thinc import torch when nothing has imported it yet.

    thinc (spaCy's ML library) imports torch at import time only to record whether it is
    available; the pipelines used here (``en_core_web_sm``, the rule-based sentencizer) never
    use it. Where torch is not loaded yet (``procrl score`` with rewards that need no model),
    that probe alone is the larger part of the time and memory of scoring one row. So torch is
    hidden for the duration of the import (thinc then records it as absent; torch imports
    normally afterwards). Training imports torch first, so there nothing changes."""
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules or "thinc.compat" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import spacy
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy


@functools.lru_cache(maxsize=1)
def _spacy_pipeline():
    spacy = _import_spacy()

    try:
        return spacy.load("en_core_web_sm", disable=["ner", "lemmatizer", "tagger", "attribute_ruler"])
    except (OSError, ImportError):
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp


_OPENING = frozenset("\"'\u201c\u2018([{*_")
_WORD_CHARACTER = re.compile(r"[^\W_]")


def _should_merge(text: str, previous_start: int, previous_end: int, following_start: int, following_end: int) -> bool:
    """True when the splitter ended a sentence inside one (abbreviation, decimal, lowercase, a piece
    of marks only). Reads a few characters at each side of the boundary, and the following piece
    once for a letter or digit: linear in the line, whatever the length of its sentences."""
    while previous_end > previous_start and text[previous_end - 1].isspace():
        previous_end -= 1
    while following_start < following_end and text[following_start].isspace():
        following_start += 1
    if previous_end <= previous_start or following_start >= following_end:
        return True
    # the first word of the following piece, after opening quotes, brackets or emphasis
    lead = following_start
    while lead < following_end and lead - following_start < 8 and text[lead] in _OPENING:
        lead += 1
    word = text[lead] if lead < following_end else ""
    if previous_end - previous_start <= 16 and _STEP_PREFIX.fullmatch(text[previous_start:previous_end] + " "):
        return True  # "1." alone is a list marker, not a sentence
    # the abbreviation pattern spans at most 9 characters: a 12-character tail decides as the whole would
    abbreviation = _ABBREV_AT_END.search(text[max(previous_start, previous_end - 12) : previous_end])
    if abbreviation:
        short = abbreviation.group(1).lower().rstrip(".")
        if short in _ABBREVIATIONS or (short in _SHORT_WORDS and not word.isupper()):
            return True
    last, before_last, first = text[previous_end - 1], text[previous_end - 2 : previous_end - 1], text[following_start]
    if last == "." and before_last.isdigit() and first.isdigit() and following_start == previous_end:
        return True  # "3." + "5": a decimal cut in two ("= 24. 48 + 24" is two sentences)
    if first in ",;:)]}%=+/" or (first == "*" and text[following_start + 1 : following_start + 2].isspace()):
        return True  # a continuation: "3 ft. * 4 ft.", "., and"; "**Then**" is emphasis, not a product
    if word.islower():
        return True  # a lower-case word, after any opening mark: still the same sentence
    # a piece with no letter or digit ("\\]", "$$", "**") closes the sentence before it
    return _WORD_CHARACTER.search(text, following_start, following_end) is None


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline < 0 else newline
        if text[position:line_end].strip():
            spans.append((position, line_end))
        position = line_end + 1
    return spans


# Where the "rules" splitter ends a sentence, within one line:
# * a run of "!" / "?", or a period that is not part of an ellipsis ("..." continues a sentence, as in
#   spaCy), then any closing marks (quotes, brackets, markdown emphasis: `**5.**`, `(A).`, `"stop."`)
#   and the end of display math (`5. \]`), then a space or the end of the line; the next sentence
#   starts at its first non-space character, an opening bracket or quote included;
# * a period between a lower-case and an upper-case letter ("the total.Then", as spaCy's tokenizer
#   splits it);
# * fullwidth and CJK stops, wherever they stand (those scripts put no space after them).
# Each alternative starts only at the first mark of a run and reads on with no way back into it, so
# a scan is linear in the line's length whatever it holds ("!!!!...", "))))...", "....").
# Abbreviations, decimals, list markers and lower-case continuations are put back together by
# _should_merge, which both splitters share.
_SENTENCE_END = re.compile(
    r"(?:(?<![!?])[!?]+|(?<!\.)\.(?!\.))[\"'\u201d\u2019)\]}*_\u00bb]*(?:[ \t]*(?:\\\]|\\\)|\$\$))?(?=\s|$)"
    r"|(?<=[a-z])\.(?=[A-Z])"
    r"|(?<![\u3002\uff01\uff1f])[\u3002\uff01\uff1f]+"
)


def _rule_sentences_in_line(text: str, start: int, end: int, limit: int = MAX_STEPS + 1) -> list[Span]:
    """Sentences of the line ``text[start:end]`` by :data:`_SENTENCE_END`, merged by _should_merge;
    reading stops past ``limit`` sentences (the completion is then ``too_long`` anyway)."""
    pieces: list[list[int]] = []
    position = start
    for match in _SENTENCE_END.finditer(text, start, end):
        _add_piece(text, pieces, position, match.end())
        position = match.end()
        if len(pieces) > limit:
            return _trimmed(text, pieces)
    _add_piece(text, pieces, position, end)
    return _trimmed(text, pieces)


def _add_piece(text: str, pieces: list[list[int]], start: int, stop: int) -> None:
    """Append ``text[start:stop]`` as a sentence, or to the last one where _should_merge says so."""
    if not text[start:stop].strip():
        return
    if pieces and _should_merge(text, pieces[-1][0], pieces[-1][1], start, stop):
        pieces[-1][1] = stop
    else:
        pieces.append([start, stop])


def _trimmed(text: str, pieces: list[list[int]]) -> list[Span]:
    sentences = []
    for start, stop in pieces:
        raw = text[start:stop]
        left = len(raw) - len(raw.lstrip())
        right = len(raw.rstrip())
        if right > left:
            sentences.append(_to_span(text, start + left, start + right))
    return sentences


_LONG_RUN = re.compile(rf"\S{{{SPACY_MAX_TOKEN + 1},}}")


def _spaced(run: str) -> str:
    """``run`` with a space every :data:`SPACY_MAX_TOKEN` characters or so: never its first or
    last character (the sentence edges spaCy reports stay where they are) and, where a neighbour
    will do, not a sentence-ending mark."""
    chars = list(run)
    index = SPACY_MAX_TOKEN
    while index < len(chars) - 1:
        for candidate in range(index, min(index + 4, len(chars) - 1)):
            if chars[candidate] not in ".!?":
                index = candidate
                break
        chars[index] = " "
        index += SPACY_MAX_TOKEN + 1
    return "".join(chars)


def _spacy_chunks(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """``(offset, text)`` pieces of one line as spaCy sees them: at most :data:`SPACY_CHUNK`
    characters (cut at a space near the limit when there is one), long runs without spaces broken
    by a space (same length, so offsets stay valid)."""
    pieces = []
    position = start
    while end - position > SPACY_CHUNK:
        cut = text.rfind(" ", position + SPACY_CHUNK // 2, position + SPACY_CHUNK)
        cut = cut + 1 if cut > position else position + SPACY_CHUNK
        pieces.append((position, cut))
        position = cut
    pieces.append((position, end))
    out = []
    for a, b in pieces:
        piece = text[a:b]
        out.append((a, _LONG_RUN.sub(lambda m: _spaced(m.group(0)), piece) if _LONG_RUN.search(piece) else piece))
    return out


def _spacy_sentences_in_line(text: str, parts: list[tuple[int, object]]) -> list[Span]:
    """Sentences of one line from spaCy's docs of its pieces (``(offset, doc)``)."""
    pieces: list[list[int]] = []
    for offset, doc in parts:
        for sent in doc.sents:
            _add_piece(text, pieces, offset + sent.start_char, offset + sent.end_char)
    return _trimmed(text, pieces)


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences of ``text[start:end]`` with offsets into ``text``; never crosses a newline."""
    end = len(text) if end is None else end
    return _sentences_of_lines([(text, _line_spans(text, start, end))])[0]


def _sentences_of_lines(items: list[tuple[str, list[tuple[int, int]]]]) -> list[list[Span]]:
    """Sentences of each ``(text, lines)``, by this process's splitter (spaCy: one pass over every
    piece of every line)."""
    if _splitter == "rules":
        out = []
        for text, lines in items:
            sentences: list[Span] = []
            for a, b in lines:
                sentences += _rule_sentences_in_line(text, a, b, MAX_STEPS + 1 - len(sentences))
                if len(sentences) > MAX_STEPS:
                    break  # too_long: the rest is not read
            out.append(sentences)
        return out
    nlp = _spacy_pipeline()
    layout = [[_spacy_chunks(text, a, b) for a, b in lines] for text, lines in items]
    flat = (piece for lines in layout for chunks in lines for _, piece in chunks)
    docs = iter(nlp.pipe(flat, batch_size=64))
    out = []
    for (text, _), lines in zip(items, layout):
        sentences: list[Span] = []
        for chunks in lines:
            sentences += _spacy_sentences_in_line(text, [(offset, next(docs)) for offset, _ in chunks])
        out.append(sentences)
    return out


# --- steps -------------------------------------------------------------------------------------

# a label or a bullet ("**bold**" opening a step is no bullet)
_STEP_PREFIX = re.compile(r"^\s*(?:(?:step|Step|STEP)\s*\d+\s*[:.)\-]|\d{1,3}[.)](?!\d)|[-•]|\*(?!\*))\s*")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _pieces(text: str, start: int, end: int, separator: re.Pattern | str) -> list[tuple[int, int]]:
    pieces = []
    position = start
    finder = separator.finditer(text, start, end) if isinstance(separator, re.Pattern) else None
    if finder is None:
        while True:
            hit = text.find(separator, position, end)
            stop = end if hit < 0 else hit
            pieces.append((position, stop))
            if hit < 0:
                break
            position = hit + len(separator)
    else:
        for match in finder:
            pieces.append((position, match.start()))
            position = match.end()
        pieces.append((position, end))
    return [(a, b) for a, b in pieces if text[a:b].strip()]


def _to_span(text: str, a: int, b: int) -> Span:
    raw = text[a:b]
    left = len(raw) - len(raw.lstrip())
    right = len(raw.rstrip())
    start, stop = a + left, a + right
    body = text[start:stop]
    prefix = _STEP_PREFIX.match(body)
    scoring = body[prefix.end() :] if prefix and prefix.end() < len(body) else body
    return Span(scoring.strip(), start, stop)


_LEAD_IN_TAIL = frozenset(" \t\r\n\f\v*_")  # what may follow a lead-in's colon ("**Step 2:**")


def _last_mark(text: str, a: int, b: int, before: int) -> int:
    """Offset of the last character of ``text[a:b]`` that is not space or emphasis; ``before`` when
    the piece holds none."""
    while b > a:
        b -= 1
        if text[b] not in _LEAD_IN_TAIL and not text[b].isspace():
            return b
    return before


def _join_lead_ins(text: str, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A piece ending with a colon ("The total number of flashlights is:") is a lead-in: one step
    with the piece it introduces (most often the display math), as ProcessBench's steps are
    logically complete paragraphs. Each piece is read once, from its end: linear in the text
    however many lead-ins follow one another."""
    joined: list[tuple[int, int]] = []
    last = -1  # offset of the joined piece's last character that is not space or emphasis
    for a, b in pieces:
        if joined and last >= 0 and text[last] == ":":
            joined[-1] = (joined[-1][0], b)
        else:
            joined.append((a, b))
            last = -1
        last = _last_mark(text, a, b, last)
    return joined


def _steps_from_pieces(text: str, end: int) -> list[tuple[int, int]] | None:
    for separator in (_BLANK_LINE, "\n"):
        pieces = _pieces(text, 0, end, separator)
        if len(pieces) >= 2:
            return _join_lead_ins(text, pieces)
    return None


def segment(completion: str) -> Segmentation:
    return segment_batch([completion])[0]


def _too_long(completion: str) -> Segmentation:
    return Segmentation(completion=completion, reasoning_end=0, steps=(), sentences=(), sentence_step=(), too_long=True)


def segment_batch(completions: list[str], answer_starts: list[int | None] | None = None) -> list[Segmentation]:
    """Segment many completions; sentence splitting runs as one spaCy pass for the batch.
    Completions over a cap come back ``too_long`` without being processed further.
    ``answer_starts``: where each completion's answer block begins when the caller reads answers
    that are not numbers (:func:`procrl.core.choices.answer_block_start`); None entries, or no
    list, use :func:`answer_line_start`."""
    texts = [c if isinstance(c, str) else "" for c in completions]
    out: list[Segmentation | None] = [None] * len(texts)
    todo = []  # (index, masked text, reasoning end, step pieces, lines)
    for index, completion in enumerate(texts):
        if len(completion) > MAX_CHARS:
            out[index] = _too_long(completion)
            continue
        masked = _mask_think_tags(completion)
        given = answer_starts[index] if answer_starts is not None else None
        end = reasoning_end(masked) if given is None else len(masked[:given].rstrip())
        lines = _line_spans(masked, 0, end)
        pieces = _steps_from_pieces(masked, end)
        if len(lines) > MAX_LINES or (pieces is not None and len(pieces) > MAX_STEPS):
            out[index] = _too_long(completion)
            continue
        todo.append((index, masked, end, pieces, lines))
    sentence_lists = _sentences_of_lines([(masked, lines) for _, masked, _, _, lines in todo])
    for (index, text, end, pieces, _), sentences in zip(todo, sentence_lists):
        completion = texts[index]
        if len(sentences) > MAX_STEPS:
            out[index] = _too_long(completion)
            continue
        if pieces is None:
            steps = [Span(_to_span(text, s.start, s.end).text, s.start, s.end) for s in sentences]
        else:
            steps = [_to_span(text, a, b) for a, b in pieces]
        steps = [s for s in steps if s.text]
        sentence_step = []
        step_index = 0
        for sentence in sentences:
            while step_index + 1 < len(steps) and sentence.start >= steps[step_index].end:
                step_index += 1
            sentence_step.append(step_index)
        out[index] = Segmentation(
            completion=completion,
            reasoning_end=end,
            steps=tuple(steps),
            sentences=tuple(sentences),
            sentence_step=tuple(sentence_step),
        )
    return out  # type: ignore[return-value]
