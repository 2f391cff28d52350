"""Audit stage: residual risk, identifiers, privacy-preserving MLM, regurgitation, membership inference."""
