"""The WER table says plainly when the LM changed nothing (λ tuned to 0)."""

from veil.downstream.asr.stage import wer_markdown


def _rows(lam: float) -> list[dict]:
    fixed = {"asr_lambda": lam, "asr_beta": 0.0, "asr_test_utterances": 40, "asr_dev_utterances": 20}
    return [{"technique": "", "method": "no_lm", "wer": 20.47, "nbest_oracle_wer": 13.74, **fixed},
            {"technique": "", "method": "oracle", "wer": 20.47, **fixed},
            {"technique": "allow_list", "method": "topk", "wer": 20.47, **fixed}]


def test_lambda_zero_is_said_in_the_first_line():
    md = wer_markdown(_rows(0.0), ["oracle", "topk"], ["allow_list"])
    first = md.split("\n", 1)[0]
    assert "The LM had no effect on this set" in first
    assert "20 development utterances" in first and "13.74%" in first


def test_a_tuned_lambda_gets_no_such_note():
    md = wer_markdown(_rows(0.3), ["oracle", "topk"], ["allow_list"])
    assert "no effect" not in md
    assert "| oracle | 20.47 |" in md


def test_cells_carry_the_interval_against_the_oracle():
    rows = _rows(0.3)
    rows[0].update(wer_vs_oracle_lo=0.4, wer_vs_oracle_hi=2.1)
    rows[1].update(wer_vs_oracle_lo=0.0, wer_vs_oracle_hi=0.0)
    rows[2].update(wer_vs_oracle_lo=-0.35, wer_vs_oracle_hi=0.6)
    md = wer_markdown(rows, ["oracle", "topk"], ["allow_list"])
    assert "| no_lm | 20.47 [+0.40, +2.10] |" in md
    assert "| oracle | 20.47 |" in md  # no interval against itself
    assert "| topk | 20.47 [-0.35, +0.60] |" in md
    assert "cannot order the two" in md.split("\n", 1)[0]
