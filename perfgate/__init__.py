"""perfgate: stop GPU kernel performance regressions before they merge."""

from pathlib import Path as _Path


def _version() -> str:
    """The version the build wrote beside this file (perfgate/VERSION, from the git history:
    hatch_build.py). A source tree that was never built or installed asks hatch_build.py."""
    here = _Path(__file__).resolve().parent
    try:
        found = (here / "VERSION").read_text(encoding="utf-8").strip()
        if found:
            return found
    except OSError:
        pass
    source = here.parent / "hatch_build.py"
    if source.is_file():
        import runpy

        computed = runpy.run_path(str(source))["version"]()
        if isinstance(computed, str):
            return computed
    return "0+unknown"


__version__ = _version()
