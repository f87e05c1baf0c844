"""The baseline file format: model, load (schema-checked, safe), dump, the fingerprint of where
its numbers came from, and which baseline judges which capture."""
