"""Report stage: tables and a self-contained HTML report with plots."""
