"""The experiment report embeds a privacy-audit output folder (its table and privacy-utility plot)."""

import base64
from types import SimpleNamespace

from veil.cli.audit_ppmlm import write_outputs
from veil.audit.membership import membership_summary
from veil.audit.metrics import regurgitation
from veil.report import write_results
from veil.report.html import extra_sections, md_to_html


def _method(scores, utility, privacy):
    s = membership_summary(scores, ["m1", "m2"])
    return {"utility": utility, "privacy": privacy, "auc": s["auc"], "tpr_at_fpr": s["tpr_at_fpr"],
            "tpr_at_fpr_strict": s["tpr_at_fpr_strict"], "mia_signal": s["signal"], "_roc": s["roc"],
            "_regurgitation": regurgitation([], {"smith": "direct"}, {"smith": 3})}


def audit_folder(path):
    """A real ``veil audit ppmlm --out`` folder, written from hand-made method results."""
    results = {"mlm": _method({"m1": 2, "m2": 1, "n1": 0, "n2": 0}, 0.31, 0.87),
               "ppmlm": _method({"m1": 0, "m2": 0, "n1": 0, "n2": 0}, 0.30, 1.0)}
    write_outputs(results, {"members": 2, "non_members": 2, "identifiers": 10}, {}, path, "tiny model")
    return path


ROWS = [{"technique": "", "method": "oracle", "perplexity": 10.0, "train_docs": 3},
        {"technique": "dlp", "method": "baseline0", "perplexity": 20.0, "masked_share": 0.2},
        {"technique": "dlp", "method": "baseline1", "perplexity": 15.0, "masked_share": 0.2}]


def spec(extra):
    return SimpleNamespace(name="demo", report_extra=extra, train=SimpleNamespace(path="train.txt"),
                           test=SimpleNamespace(path="test.txt"), pretrain=None)


def test_report_embeds_an_audit_folder_listed_in_the_experiment_file(tmp_path):
    audit = audit_folder(tmp_path / "ppmlm")
    out = tmp_path / "exp"
    out.mkdir()
    write_results([dict(r) for r in ROWS], out, spec([audit, tmp_path / "typo"]))
    page = (out / "report.html").read_text()
    assert "<h2>Privacy audit</h2>" in page
    png = base64.b64encode((audit / "privacy_utility.png").read_bytes()).decode()
    assert png in page  # the privacy-utility plot itself, inlined
    assert base64.b64encode((audit / "roc.png").read_bytes()).decode() in page
    assert "<td>PPMLM</td>" in page and "<td>MLM</td>" in page  # table.md as an HTML table
    assert "[1] PPMLM: no indirect identifier was predicted" in page  # its footnote kept
    assert page.index("table.md") < page.index("privacy_utility.png") < page.index("roc.png")
    assert f"Not found: {tmp_path / 'typo'}" in page  # a wrong path is named, not dropped


def test_report_picks_up_audit_folders_under_out_audit(tmp_path):
    out = tmp_path / "exp"
    audit_folder(out / "audit" / "ppmlm")
    (out / "audit" / "notes.md").write_text("# Audit notes\n\nRun on 2 persons.\n")
    write_results([dict(r) for r in ROWS], out, None)
    page = (out / "report.html").read_text()
    assert base64.b64encode((out / "audit" / "ppmlm" / "privacy_utility.png").read_bytes()).decode() in page
    assert "<h3>Audit notes</h3>" in page and "<p>Run on 2 persons.</p>" in page


def test_a_folder_without_audit_outputs_is_reported(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "No audit outputs in" in extra_sections([tmp_path / "empty"])


def test_md_to_html_keeps_tables_headings_and_paragraphs():
    md = "### Risk\n\n| a | b |\n|---|---:|\n| **x** | 1 |\n\nnote <1>\n"
    page = md_to_html(md, top_heading=4)
    assert "<h4>Risk</h4>" in page and "<td><strong>x</strong></td>" in page
    assert '<th style="text-align:right">b</th>' in page and "<p>note &lt;1&gt;</p>" in page  # raw HTML escaped
