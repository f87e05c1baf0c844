"""`never`: the end of an exhaustive if-chain over an enum, so that mypy flags a member left out.

typing.assert_never does this from Python 3.11 on; perfgate supports 3.10 and needs no
typing_extensions for one function."""

from __future__ import annotations

from typing import NoReturn


def never(value: NoReturn) -> NoReturn:
    """Reached only when a member was left out: mypy sees `value` is not NoReturn there."""
    raise AssertionError(f"unhandled state {value!r}")
