"""The escaping helper lives in perfgate.common.escape (below every stage, so that ncu/ and
the command line use the same one); this name stays for the reporters that import it."""

from perfgate.common.escape import log_line, log_text, no_mentions, one_line

__all__ = ["log_line", "log_text", "no_mentions", "one_line"]
