"""Submissions to look at: code or tests that are the same, or nearly, after
normalisation.  A reason to look, never a verdict.

    pairs = similar_pairs({"ada": {"code": ..., "tests": ...}, ...}, starter={"code": ..., "tests": ...})

The method is winnowing (Schleimer, Wilkerson and Aiken 2003, the method of
MOSS), over Python's own tokens:

    1. tokenize; drop comments, blank lines and docstrings; every local name
       becomes one symbol and every number and string another, so renaming
       variables or editing constants changes nothing; keywords, operators,
       attribute names (np.allclose) and imported names stay;
    2. hash every K consecutive tokens (a k-gram);
    3. in every window of W consecutive hashes keep the smallest: the
       fingerprints.  Any run of K + W - 1 tokens two files share is sure to
       give them a common fingerprint; runs shorter than K never do;
    4. what every correct submission shares is removed from both sides: the
       fingerprints of the starter (the stub of the module file and the
       starter test `ol start` gives everyone, and for the code the
       reference and its alternates: the shape of a correct rope.py), and
       those of the class's own common stock: a fingerprint found in more
       than COMMON_SHARE of the submissions, and in at least COMMON_LEAST of
       them (MOSS's -m: passages in many programs are not evidence).

    similarity(A, B) = |F(A) & F(B)| / min(|F(A)|, |F(B)|)

so a file copied whole into a longer one is 1.00.  Files with fewer than
MIN_FINGERPRINTS fingerprints left (little of their own) are not compared;
two identical files are listed if anything of their own is left.  Code and
tests are compared apart; the pairs at or above the threshold (ol grade
--similarity, default THRESHOLD) come most similar first, then by how much
they share.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import math
import tokenize
from collections import Counter
from dataclasses import dataclass
from itertools import combinations

K = 15                 # tokens per k-gram: shared runs shorter than this are idiom, not copying
W = 8                  # window: a shared run of K + W - 1 = 22 tokens is always found
MIN_FINGERPRINTS = 12  # below this a file holds too little of its own to compare
THRESHOLD = 0.80       # pairs at or above this similarity are listed (ol grade --similarity)
COMMON_SHARE = 0.5     # a fingerprint in more than this share of the class is its common stock...
COMMON_LEAST = 3       # ...when it is in at least this many submissions (two students are not a class)

_NAME, _NUMBER, _STRING = "v", "0", "s"
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT,
            getattr(tokenize, "FSTRING_MIDDLE", -1), getattr(tokenize, "FSTRING_END", -1)}   # 3.12's f-string parts
_STRINGS = {tokenize.STRING, getattr(tokenize, "FSTRING_START", -1)}


@dataclass(frozen=True)
class SimilarPair:
    first: str
    second: str
    part: str              # "code" or "tests"
    similarity: float      # 0..1, as defined above
    identical: bool        # the same bytes
    shared: int = 0        # fingerprints of their own in common (after step 4)


def similar_pairs(texts: dict[str, dict[str, str]], starter: dict[str, str] | None = None,
                  threshold: float = THRESHOLD) -> list[SimilarPair]:
    """Pairs of students whose code or tests reach `threshold`, most similar
    first.  texts: {student: {"code": text, "tests": text}} (a part may be
    missing or empty); starter: {"code": text, "tests": text}, what everyone
    is given or shares (the stubs, the starter test, the reference)."""
    starter = starter or {}
    pairs = []
    for part in ("code", "tests"):
        given = fingerprints(starter.get(part, ""))
        prints = {}
        for student, parts in texts.items():
            text = parts.get(part) or ""
            if text.strip():
                prints[student] = (fingerprints(text) - given, hashlib.sha256(text.encode()).digest())
        stock = common_stock([own for own, _ in prints.values()])
        for a, b in combinations(sorted(prints), 2):
            (fa, da), (fb, db) = prints[a], prints[b]
            fa, fb = fa - stock, fb - stock
            shared = len(fa & fb)
            if da == db:
                if fa:                              # the same file, with something of its own left
                    pairs.append(SimilarPair(a, b, part, 1.0, True, shared))
                continue
            if min(len(fa), len(fb)) < MIN_FINGERPRINTS:
                continue
            similarity = shared / min(len(fa), len(fb))
            if similarity >= threshold:
                pairs.append(SimilarPair(a, b, part, similarity, False, shared))
    return sorted(pairs, key=lambda p: (-p.similarity, -p.shared, p.part, p.first, p.second))


def common_stock(sets: list[set[int]]) -> set[int]:
    """Fingerprints in more than COMMON_SHARE of `sets`, and in at least COMMON_LEAST of them."""
    counts = Counter(f for prints in sets for f in prints)
    least = max(COMMON_LEAST, math.floor(COMMON_SHARE * len(sets)) + 1)
    return {f for f, count in counts.items() if count >= least}


def fingerprints(text: str) -> set[int]:
    """The winnowed k-gram hashes of `text` (step 1 to 3 above)."""
    hashes = [_hash(" ".join(gram)) for gram in _grams(normalized_tokens(text), K)]
    if len(hashes) <= W:
        return {min(hashes)} if hashes else set()
    return {min(hashes[start:start + W]) for start in range(len(hashes) - W + 1)}


def normalized_tokens(text: str) -> list[str]:
    """Step 1: the tokens that survive renaming and reformatting."""
    try:
        raw = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIPPED]
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError):
        return text.split()          # not Python the tokenizer accepts: compare its words
    imported = _imported_names(raw)
    out: list[str] = []
    for index, token in enumerate(raw):
        line_start = index == 0 or raw[index - 1].type == tokenize.NEWLINE
        if token.type == tokenize.STRING and line_start and index + 1 < len(raw) \
                and raw[index + 1].type == tokenize.NEWLINE:
            continue                 # a string standing alone (a docstring); its NEWLINE stays
        if token.type == tokenize.NAME:
            kept = keyword.iskeyword(token.string) or token.string in imported or (out and out[-1] == ".")
            out.append(token.string if kept else _NAME)
        elif token.type == tokenize.NUMBER:
            out.append(_NUMBER)
        elif token.type in _STRINGS:
            out.append(_STRING)
        elif token.type == tokenize.NEWLINE:
            if out and out[-1] != ";":
                out.append(";")
        else:
            out.append(token.string)
    return out


def _imported_names(raw: list[tokenize.TokenInfo]) -> set[str]:
    """Names an import statement binds or reads (numpy, np, rope_cos_sin): shared
    by every student, so they are kept as they are."""
    names, in_import = set(), False
    for token in raw:
        if token.type == tokenize.NAME and token.string in ("import", "from"):
            in_import = True
        elif token.type == tokenize.NEWLINE:
            in_import = False
        elif in_import and token.type == tokenize.NAME and token.string not in ("import", "from", "as"):
            names.add(token.string)
    return names


def _grams(tokens: list[str], k: int):
    return (tokens[i:i + k] for i in range(len(tokens) - k + 1))


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
