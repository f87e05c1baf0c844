"""perfgate: stop GPU kernel performance regressions before they merge."""

__version__ = "0.1.0"
