"""Text as a reader sees it: Unicode folded so look-alike lesson markers can be found.

A lessons block trusts two words, `REPEAT:` and `AVOID:`. Stored text may spell them with
fullwidth or mathematical letters, Cyrillic, Greek or Cherokee look-alikes, small capitals,
zero-width characters between the letters, or another colon (ratio, modifier letter colon, fullwidth colon). A model reads
all of those as the marker, so the cleanup folds them before it looks.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["find_markers", "neutralize_markers", "normalize_visible"]

# Not Unicode "format" characters (those are dropped by category) but invisible all the same:
# the combining grapheme joiner, Hangul fillers, Mongolian and plain variation selectors,
# the Braille blank.
_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)

# Letters that look like the Latin capitals of REPEAT and AVOID (or their lower case) but
# that NFKC leaves alone: Cyrillic, Greek, Cherokee, Latin small capitals, and digits.
_LOOKALIKE = str.maketrans(
    {
        # Cyrillic
        "\u0410": "A", "\u0430": "A", "\u0412": "B", "\u0415": "E", "\u0435": "E",
        "\u0401": "E", "\u0451": "E", "\u041e": "O", "\u043e": "O", "\u0420": "P",
        "\u0440": "P", "\u0422": "T", "\u0442": "T", "\u0406": "I", "\u0456": "I",
        "\u0407": "I", "\u0457": "I", "\u04c0": "I", "\u04cf": "I", "\u0474": "V",
        "\u0475": "V", "\u0500": "D", "\u0501": "D", "\u042f": "R", "\u0404": "E",
        "\u0454": "E", "\u0510": "E", "\u0511": "E", "\u051a": "Q",
        # Greek
        "\u0391": "A", "\u03b1": "A", "\u0395": "E", "\u03b5": "E", "\u0399": "I",
        "\u03b9": "I", "\u039f": "O", "\u03bf": "O", "\u03a1": "P", "\u03c1": "P",
        "\u03a4": "T", "\u03c4": "T", "\u03bd": "V", "\u0394": "D", "\u03f4": "O",
        # Cherokee
        "\u13aa": "A", "\u13a0": "D", "\u13ac": "E", "\u13a5": "I", "\u13be": "O",
        "\u13e2": "P", "\u13a1": "R", "\u13d2": "R", "\u13a2": "T", "\u13d9": "V",
        # Latin small capitals and other letters NFKC keeps
        "\u1d00": "A", "\u1d05": "D", "\u1d07": "E", "\u026a": "I", "\u1d0f": "O",
        "\u1d18": "P", "\u0280": "R", "\u1d1b": "T", "\u1d20": "V", "\u0131": "I",
        "\u0251": "A", "\u0252": "A",
        # Digits and signs read as letters
        "0": "O", "1": "I", "|": "I", "l": "I", "!": "I",
    }
)  # fmt: skip

# Colons and what reads as one (NFKC already folds the fullwidth and small forms).
_COLONS = ":\u02d0\u02f8\u0589\u05c3\u0703\u0704\u0705\u1361\u1365\u166e\u16ec\u1804\u1806\u205a\u2236\u2982\ua4fd\ua789\ufe30\ufe55\uff1a"

_MARKER = re.compile(
    r"(?<![A-Z0-9])(REPEAT|AVOID)\s*[" + re.escape(_COLONS) + "]",
)


def normalize_visible(text: str) -> str:
    """`text` in NFKC with every format (Cf) and other invisible character removed.

    NFKC turns fullwidth, mathematical, circled and compatibility letters, digits and colons
    into their plain forms; what remains is text a reader sees the same way.
    """
    folded = unicodedata.normalize("NFKC", text)
    kept = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    # NFKC again: removing a joiner can bring a letter and its combining mark together.
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", kept))


def _skeleton_char(ch: str) -> str:
    base = unicodedata.normalize("NFD", ch)[0]  # Á -> A: accents do not hide a marker
    return base.translate(_LOOKALIKE).upper()[:1] or ch


def find_markers(text: str) -> list[tuple[int, int, str]]:
    """`(start, end, word)` of each look-alike `REPEAT:` / `AVOID:` in normalized `text`.

    `text` must come from `normalize_visible`. Each character is matched by the plain
    capital it looks like, so the spans index `text` itself; combining marks are skipped.
    """
    skeleton: list[str] = []
    positions: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in ("Mn", "Me"):
            continue  # a mark over a letter leaves the letter readable
        skeleton.append(_skeleton_char(ch))
        positions.append(i)
    found: list[tuple[int, int, str]] = []
    for match in _MARKER.finditer("".join(skeleton)):
        end = positions[match.end() - 1] + 1
        found.append((positions[match.start()], end, match.group(1)))
    return found


def neutralize_markers(text: str) -> str:
    """`text` (from `normalize_visible`) with every look-alike marker made a plain word.

    `AVOID:` in any disguise becomes `avoid`, without its colon. Repeated until none is left,
    as removing one colon can complete another (`AVOID AVOID::`).
    """
    while found := find_markers(text):
        for start, end, word in reversed(found):
            text = text[:start] + word.lower() + text[end:]
    return text
