"""BM25 ranking of tools for a text query (sans-IO, no dependencies).

Each tool is one document made of its name (counted three times: names are short and say the
most), its title, its description and the names of its parameters. Words are split on
anything that is not a letter or digit and at camelCase humps, lower-cased, stop words
dropped and plural / -ing / -ed endings cut, the same way for the query and the documents.
Okapi BM25 with k1 = 1.2, b = 0.75 (Robertson & Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond", 2009), with the non-negative idf of Lucene.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

K1 = 1.2
B = 0.75
NAME_WEIGHT = 3

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "this",
        "to",
        "use",
        "used",
        "using",
        "was",
        "what",
        "when",
        "which",
        "with",
        "you",
        "your",
        "all",
        "any",
        "can",
        "do",
        "does",
        "get",
    )
)


def stem(word: str) -> str:
    """A light suffix cut: enough to meet "messages" with "message" and "listing" with "list"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def words(text: str) -> list[str]:
    """The terms of a text, as the index and the queries see them."""
    out = []
    for match in _WORD.findall(text):
        word = match.lower()
        if word not in _STOP:
            out.append(stem(word))
    return out


def document(tool: dict[str, Any]) -> list[str]:
    """The terms of one MCP Tool object."""
    terms = words(str(tool.get("name", ""))) * NAME_WEIGHT
    terms += words(str(tool.get("title", "")))
    terms += words(str(tool.get("description", "")))
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name in properties:
            terms += words(str(name))
    return terms


@dataclass(slots=True)
class Hit:
    name: str
    score: float


class Bm25Index:
    """An index of named documents; built once per tool list, queried many times."""

    def __init__(self, docs: Iterable[tuple[str, list[str]]]) -> None:
        self._names: list[str] = []
        self._lengths: list[int] = []
        postings: dict[str, list[tuple[int, int]]] = {}
        for number, (name, terms) in enumerate(docs):
            self._names.append(name)
            self._lengths.append(len(terms))
            for term, count in Counter(terms).items():
                postings.setdefault(term, []).append((number, count))
        self._postings = postings
        count = len(self._names)
        self._average = (sum(self._lengths) / count) if count else 0.0
        self._idf = {
            term: math.log(1 + (count - len(docs_of) + 0.5) / (len(docs_of) + 0.5))
            for term, docs_of in postings.items()
        }

    def __len__(self) -> int:
        return len(self._names)

    def search(self, query: str, limit: int, allowed: Callable[[str], bool] | None = None) -> list[Hit]:
        """The best `limit` documents for `query` with a positive score, best first (ties by
        listing order); `allowed` leaves out the names it refuses before ranking."""
        scores: dict[int, float] = {}
        for term in set(words(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for number, freq in self._postings[term]:
                norm = 1 - B + B * self._lengths[number] / self._average
                scores[number] = scores.get(number, 0.0) + idf * freq * (K1 + 1) / (freq + K1 * norm)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        hits: list[Hit] = []
        for number, score in ranked:
            name = self._names[number]
            if allowed is None or allowed(name):
                hits.append(Hit(name, score))
                if len(hits) == limit:
                    break
        return hits


def index_tools(tools: Sequence[dict[str, Any]]) -> Bm25Index:
    return Bm25Index((str(tool.get("name", "")), document(tool)) for tool in tools)
