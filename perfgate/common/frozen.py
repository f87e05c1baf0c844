"""Building frozen dataclasses in a hot loop.

A frozen dataclass's generated __init__ sets each field with object.__setattr__ (about 0.45 µs
a field on CPython 3.11): 5 µs for a Comparison, and a check of 1,000 kernels builds 37,000
of them and as many Measured values (docs/scale.md). maker() gives a constructor that fills
the instance's __dict__ at once; the instance is the same, field for field
(tests/metrics/test_columns.py holds the two equal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[..., T]:
    """A keyword-only constructor of the frozen dataclass `cls`, with its defaults. Only for
    classes without __post_init__ or __slots__ (nothing would run them or fill them)."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: not a plain dataclass")
    if "__slots__" in vars(cls):
        raise TypeError(f"{cls.__name__}: has __slots__")
    fields = dataclasses.fields(cls)
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    factories = {
        f.name: f.default_factory for f in fields if f.default_factory is not dataclasses.MISSING
    }
    required = frozenset(
        f.name for f in fields if f.name not in defaults and f.name not in factories
    )
    new = object.__new__

    def make(**values: Any) -> T:
        obj = new(cls)
        state = obj.__dict__
        state.update(defaults)
        for name, factory in factories.items():
            if name not in values:
                state[name] = factory()
        state.update(values)
        return obj

    make.__doc__ = f"{cls.__name__}(**fields), built without one __setattr__ per field"
    make.required = required  # type: ignore[attr-defined]
    return make
