"""The HTML report: one self-contained file with embedded plots, a section per policy."""
