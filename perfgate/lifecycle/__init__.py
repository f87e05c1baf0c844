"""How a baseline is made and changes over its life: record (with calibrated bounds), accept,
update and ratchet, the in-place editor that keeps hand edits, and show/diff for review."""
