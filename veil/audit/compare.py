"""Audit stage: the residual risk of several maskings of one annotated corpus, side by side (the report's privacy section).

The corpus is veil's annotated JSONL (``text`` plus ``spans: [{start, end, label}]``, the layout of the
bundled demo corpus, ``scripts/make_demo_corpus.py``). Its labels are already the mask stage's own,
so :data:`VEIL_TYPE_MAP` maps them to the infoTypes of the risk score table
(``veil/audit/data/infotype_scores.csv``): a spelled-out name is a name, an order or account number
a generic id, an organisation named by its agent is tied to the speaker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from veil.errors import VeilError
from veil.types import Document

VEIL_TYPE_MAP: dict[str, str | None] = {
    "PERSON_NAME": "PERSON_NAME", "SPELLED_WORD": "PERSON_NAME", "ORGANIZATION_NAME": "ORGANIZATION_NAME_SPEAKER",
    "LOCATION": "LOCATION", "STREET_ADDRESS": "ADDRESS", "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL",
    "USERNAME": "USER_NAME", "NUMBER": "GENERIC_ID", "CREDIT_CARD_NUMBER": "CREDIT_CARD_NUMBER",
    "US_SOCIAL_SECURITY_NUMBER": "SSN", "DATE": None, "AGE": "AGE",
}


def gold_from_documents(docs: Sequence[Document], field: str = "spans") -> list[Any]:
    """``GoldDocument`` objects from documents whose ``meta[field]`` holds ``[{start, end, label}]``."""
    from veil.mask.gold import GoldDocument, GoldSpan

    out = []
    for d in docs:
        spans = d.meta.get(field)
        if not isinstance(spans, list):
            raise VeilError(f"document {d.id!r} has no {field!r} list of gold spans")
        out.append(GoldDocument(d, [GoldSpan(int(s["start"]), int(s["end"]), str(s["label"])) for s in spans]))
    return out


def risk_by_masking(gold: Sequence[Any], maskings: Mapping[str, Sequence[str]],
                    type_map: Mapping[str, str | None] = VEIL_TYPE_MAP) -> list[dict[str, Any]]:
    """One Table-4 row per masking (a name -> the maskers it runs), scored on the same gold documents."""
    from veil.audit import risk
    from veil.audit.identifiers import detect_spans

    docs = [g.doc for g in gold]
    rows = []
    for name, maskers in maskings.items():
        risks = risk.audit_against_gold(gold, detect_spans(docs, list(maskers)), "veil", type_map=type_map)
        rows.append({**risk.group_table(risks)[-1], "group": name})
    return rows


def write_risk_by_masking(path: str | Path, rows: Sequence[Mapping[str, Any]], corpus: str) -> None:
    from veil.audit import plots, risk

    text = (f"### Residual risk of each masking on {corpus}\n\n"
            "Each document scores the personal data a masking left visible (Dialpad §4: a name 5, a phone 4, "
            "an organisation tied to the speaker 2, ..., half for a partly masked mention); a masking passes "
            f"when mean + std < {risk.THRESHOLD:g}. Gold spans come from the corpus.\n\n"
            + risk.format_table(rows, "masking") + "\n")
    plots.write_text(Path(path), text)
