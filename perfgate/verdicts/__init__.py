"""A capture checked against a baseline: one verdict per kernel, with its comparisons and the
root causes of what changed."""
