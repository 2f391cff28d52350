"""Audit stage: direct and indirect identifiers of persons in a corpus (PPMLM §4.1, Appendices B–C).

- **Direct identifiers**: the surface strings a named-entity masker (by default veil's
  ``entity_tagger``) finds in a person's documents.
- **Indirect identifiers**: terms (lower-cased words from :func:`veil.textutil.iter_words`, and
  n-grams of them up to ``max_n`` words) that fewer than ``k`` persons use. They come from a
  person–term bipartite graph (:class:`PersonWordGraph`): an edge links a person to every term in
  any of their documents. ``k = 2`` is the paper's setting (a term used by one person only).

n-grams never cross a document boundary (for Switchboard a document is one utterance). Every
person of the corpus is a key of the returned dicts, with an empty set when they have no
identifiers, so callers can iterate over persons (membership inference needs the zeros too).

``statistics`` summarises a graph in the shape of the paper's Figures 2–3 (identifiers per
person; share of distinct terms and of term occurrences used by one person only).
"""

from __future__ import annotations

import logging
import statistics as _stats
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from veil.errors import VeilError
from veil.textutil import iter_words
from veil.types import Document, Span

log = logging.getLogger(__name__)


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text`` (the graph's unigrams)."""
    return [w.lower() for _, _, w in iter_words(text)]


def ngrams(words: Sequence[str], max_n: int = 1, min_n: int = 1) -> Iterable[str]:
    """Every n-gram, ``min_n <= n <= max_n``, of ``words``, words joined by one space."""
    for n in range(min_n, min(max_n, len(words)) + 1):  # no n-gram is longer than the text
        for i in range(len(words) - n + 1):
            yield words[i] if n == 1 else " ".join(words[i:i + n])


@dataclass
class PersonWordGraph:
    """The person–term bipartite graph with edge weights (occurrences of the term in the person's text).

    ``term_persons[t]`` is the set of persons using term ``t``; ``person_terms[p]`` counts each
    term of person ``p``; ``documents[p]`` is how many documents person ``p`` has.
    """

    max_n: int
    term_persons: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    person_terms: dict[str, Counter] = field(default_factory=dict)
    documents: Counter = field(default_factory=Counter)

    @property
    def persons(self) -> list[str]:
        return sorted(self.person_terms)

    def occurrences(self, term: str) -> int:
        return sum(self.person_terms[p][term] for p in self.term_persons.get(term, ()))

    def terms(self, n: int | None = None) -> Iterable[str]:
        """All terms, or only the n-grams of exactly ``n`` words."""
        if n is None:
            return iter(self.term_persons)
        return (t for t in self.term_persons if t.count(" ") == n - 1)


def _check_k_n(k: int, max_n: int) -> None:
    if k < 2:
        raise VeilError(f"k must be at least 2 (a term used by fewer than k persons); got {k}")
    if max_n < 1:
        raise VeilError(f"max_n must be at least 1; got {max_n}")


def person_word_graph(docs: Iterable[Document], max_n: int = 1, progress: bool = False) -> PersonWordGraph:
    """Build the person–term graph over ``docs`` (each needs ``.person``), terms up to ``max_n`` words."""
    _check_k_n(2, max_n)
    graph = PersonWordGraph(max_n=max_n)
    it: Iterable[Document] = docs
    if progress:
        from tqdm import tqdm

        it = tqdm(docs, desc="person-word graph", unit="doc", disable=None)  # no bar into a log file
    for doc in it:
        if doc.person is None or doc.person == "":
            raise VeilError(f"document {doc.id!r} has no person; identifiers need a person field "
                            f"(for Switchboard the caller, for TAB the applicant)")
        person = str(doc.person)
        counts = graph.person_terms.get(person)
        if counts is None:
            counts = graph.person_terms[person] = Counter()
        graph.documents[person] += 1
        doc_terms = Counter(ngrams(words_of(doc.text), max_n))
        counts.update(doc_terms)
        for term in doc_terms:
            graph.term_persons[term].add(person)
    if not graph.person_terms:
        raise VeilError("no documents: the corpus is empty")
    return graph


def _graph(docs_or_graph: Iterable[Document] | PersonWordGraph, max_n: int) -> PersonWordGraph:
    if isinstance(docs_or_graph, PersonWordGraph):
        if docs_or_graph.max_n < max_n:
            raise VeilError(f"the graph holds terms up to {docs_or_graph.max_n} words; max_n={max_n} asked")
        return docs_or_graph
    return person_word_graph(docs_or_graph, max_n=max_n)


def indirect_identifiers(docs: Iterable[Document] | PersonWordGraph, k: int = 2,
                         max_n: int = 1) -> dict[str, set[str]]:
    """Per person, the terms (words and n-grams up to ``max_n`` words) that fewer than ``k`` persons use.

    ``docs`` may also be a :class:`PersonWordGraph` built with at least ``max_n``. Terms are
    lower-cased; n-grams are words joined by one space. Every person is a key.
    """
    _check_k_n(k, max_n)
    graph = _graph(docs, max_n)
    out: dict[str, set[str]] = {p: set() for p in graph.person_terms}
    for term, persons in graph.term_persons.items():
        if len(persons) < k and term.count(" ") < max_n:
            for p in persons:
                out[p].add(term)
    return out


def detect_spans(docs: Sequence[Document], masker_names: Sequence[str] = ("entity_tagger",),
                 options: Mapping[str, dict] | None = None, *, executor: Any = None, batch_size: int = 2000,
                 progress: bool = False, spans_file: str | Path | None = None,
                 overwrite: bool = False) -> list[list[Span]]:
    """Merged spans per document from the named maskers, through the corpus loop's detect stage
    (:mod:`veil.run.detect`: ``executor``, ``batch_size``; ``spans_file`` keeps them, resumable; ``overwrite``
    replaces another run's)."""
    from functools import partial

    from veil.run.components import build_engine
    from veil.run.detect import detect_documents

    names, options = list(masker_names), {k: dict(v) for k, v in (options or {}).items()}
    make = partial(build_engine, names, "numbered", options)
    if executor is not None and executor.name != "local":
        make()  # bad names / options fail here, not in every worker (the local loop builds it once, lazily)
    return detect_documents(docs, make, settings={"maskers": names, "options": options}, spans_file=spans_file,
                            executor=executor, batch_size=batch_size, progress=progress, desc="direct identifiers",
                            overwrite=overwrite)


def direct_identifiers(docs: Sequence[Document], masker_names: Sequence[str] = ("entity_tagger",),
                       options: Mapping[str, dict] | None = None,
                       spans: Sequence[Sequence[Span]] | None = None, **detect: Any) -> dict[str, set[str]]:
    """Per person, the surface strings (as written, edges stripped of spaces) the maskers find.

    ``spans`` (one list per document, offsets on ``doc.text``) skips detection when already done;
    otherwise :func:`detect_spans` finds them (``detect``: its ``executor``, ``batch_size``,
    ``progress``, ``spans_file``, ``overwrite``). Use :func:`identifier_words` to turn the surfaces into the
    lower-cased words they contain.
    """
    docs = list(docs)
    for d in docs:
        if d.person is None or d.person == "":
            raise VeilError(f"document {d.id!r} has no person; identifiers need a person field")
    if spans is None:
        spans = detect_spans(docs, masker_names, options, **detect)
    if len(spans) != len(docs):
        raise VeilError(f"{len(spans)} span lists for {len(docs)} documents")
    out: dict[str, set[str]] = {str(d.person): set() for d in docs}
    for doc, doc_spans in zip(docs, spans):
        for s in doc_spans:
            surface = doc.text[s.start:s.end].strip()
            if surface:
                out[str(doc.person)].add(surface)
    return out


def identifier_words(identifiers: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """Per person, the lower-cased words inside their identifier strings (``"John Smith"`` -> john, smith)."""
    return {p: {w for s in ids for w in words_of(s)} for p, ids in identifiers.items()}


# --- statistics (Figures 2-3 of the paper) -------------------------------------------------------------

def sharing_table(graph: PersonWordGraph, n: int = 1) -> list[dict[str, Any]]:
    """Rows per number of persons sharing a term (n-grams of exactly ``n`` words), Figure 3's CDFs.

    Each row: ``persons`` (m), ``distinct_terms`` used by exactly m persons, ``occurrences`` of them,
    and the cumulative shares of distinct terms and of occurrences used by at most m persons.
    """
    distinct: Counter = Counter()
    occ: Counter = Counter()
    for term in graph.terms(n):
        persons = graph.term_persons[term]
        m = len(persons)
        distinct[m] += 1
        occ[m] += sum(graph.person_terms[p][term] for p in persons)
    total_d, total_o = sum(distinct.values()), sum(occ.values())
    rows, cum_d, cum_o = [], 0, 0
    for m in sorted(distinct):
        cum_d += distinct[m]
        cum_o += occ[m]
        rows.append({"persons": m, "distinct_terms": distinct[m], "occurrences": occ[m],
                     "cum_share_distinct": cum_d / total_d if total_d else 0.0,
                     "cum_share_occurrences": cum_o / total_o if total_o else 0.0})
    return rows


def per_person_table(graph: PersonWordGraph, indirect: Mapping[str, set[str]],
                     direct: Mapping[str, set[str]] | None = None, max_n: int | None = None) -> list[dict[str, Any]]:
    """One row per person: documents, words (occurrences), distinct words, identifiers (Figure 2).

    ``indirect_<n>gram`` columns count the person's indirect identifiers of each length up to
    ``max_n`` (default: the graph's).
    """
    rows = []
    for p in graph.persons:
        unigrams = {t: c for t, c in graph.person_terms[p].items() if " " not in t}
        ind = indirect.get(p, set())
        row: dict[str, Any] = {"person": p, "documents": graph.documents[p],
                               "words": sum(unigrams.values()), "distinct_words": len(unigrams),
                               "indirect": len(ind)}
        for n in range(1, (max_n or graph.max_n) + 1):
            row[f"indirect_{n}gram"] = sum(1 for t in ind if t.count(" ") == n - 1)
        if direct is not None:
            d = direct.get(p, set())
            d_words = {w for s in d for w in words_of(s)}
            ind_words = {t for t in ind if " " not in t}
            row["direct"] = len(d)
            row["indirect_also_direct"] = len(ind_words & d_words)  # e.g. a last name
        rows.append(row)
    return rows


def _describe(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0, "share_zero": 0.0}
    return {"mean": float(_stats.fmean(values)), "median": float(_stats.median(values)),
            "min": float(min(values)), "max": float(max(values)),
            "share_zero": sum(1 for v in values if v == 0) / len(values)}


def summary(graph: PersonWordGraph, indirect: Mapping[str, set[str]], k: int,
            direct: Mapping[str, set[str]] | None = None, max_n: int | None = None) -> dict[str, Any]:
    """Headline numbers: persons, documents, words; per-person identifier counts; one-person shares.

    ``max_n`` is the n-gram length ``indirect`` was computed with (default: the graph's).
    """
    max_n = max_n or graph.max_n
    people = per_person_table(graph, indirect, direct, max_n=max_n)
    share = sharing_table(graph, 1)
    below_k = [r for r in share if r["persons"] < k]
    single = share[0] if share and share[0]["persons"] == 1 else None
    out: dict[str, Any] = {
        "persons": len(people),
        "documents": int(sum(graph.documents.values())),
        "words": int(sum(r["words"] for r in people)),
        "distinct_words": sum(r["distinct_terms"] for r in share),
        "k": k, "max_n": max_n,
        "share_distinct_words_one_person": single["cum_share_distinct"] if single else 0.0,
        "share_word_occurrences_one_person": single["cum_share_occurrences"] if single else 0.0,
        "share_distinct_words_below_k": below_k[-1]["cum_share_distinct"] if below_k else 0.0,
        "share_word_occurrences_below_k": below_k[-1]["cum_share_occurrences"] if below_k else 0.0,
        "indirect_total": len(set().union(*indirect.values())) if indirect else 0,
        "indirect_per_person": _describe([r["indirect"] for r in people]),
        "words_per_person": _describe([r["words"] for r in people]),
    }
    if direct is not None:
        out["direct_total"] = len(set().union(*direct.values())) if direct else 0
        out["direct_per_person"] = _describe([r["direct"] for r in people])
    return out
