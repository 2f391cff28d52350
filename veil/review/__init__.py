"""Review stage: humans read masked documents in the browser and record what the masking got wrong.

- :mod:`veil.review.store`: the append-only review file (one decision a line, fsynced) and its fold
  into each document's state;
- :mod:`veil.review.session`: the reviewed sample (masked documents, their originals, the
  placeholders' original spans; a page per document, or per call with a group field) and the
  decisions a page may make on it;
- :mod:`veil.review.pick`: which documents (or calls) to review: seeded random, or those the tagger
  is least sure of covering the most distinct doubtful words (``pick_documents``);
- :mod:`veil.review.app`: the Starlette app behind ``veil review`` (a token in the URL, no text in
  any log);
- :mod:`veil.review.export`: gold spans for ``veil eval-detect --format review``, the Dialpad
  paper's ``(text)[MISSED_TAG]`` files for ``veil audit review import``, term lists for
  ``veil mask --add-terms`` / ``--exclude``;
- :mod:`veil.review.agreement`: agreement between two reviewers of the same sample.
"""
