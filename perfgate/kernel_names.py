"""Kernel identity from the names ncu prints.

ncu prints demangled C++ signatures by default ("void at::reduce_kernel<512, 1, ...>(T3)").
Baselines match kernels by their function name (the qualified name without return type,
template arguments and parameters), by the exact demangled name, or by a regular expression.
"""

from __future__ import annotations

# Namespace spellings that contain brackets of their own; they are kept whole.
_ATOMS = ("<unnamed>", "(anonymous namespace)", "{anonymous}")
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def _protect(name: str) -> tuple[str, dict[str, str]]:
    table: dict[str, str] = {}
    for i, atom in enumerate(_ATOMS):
        if atom in name:
            key = f"\x00{i}\x00"
            table[key] = atom
            name = name.replace(atom, key)
    return name, table


def _restore(name: str, table: dict[str, str]) -> str:
    for key, atom in table.items():
        name = name.replace(key, atom)
    return name


def _strip_top_level(text: str, opener: str) -> str:
    """Remove every top-level bracketed group that starts with `opener`."""
    out: list[str] = []
    depth = 0
    stack: list[str] = []
    for ch in text:
        if depth == 0 and ch == opener:
            depth, stack = 1, [_OPEN[ch]]
            continue
        if depth:
            if ch in _OPEN:
                stack.append(_OPEN[ch])
                depth += 1
            elif stack and ch == stack[-1]:
                stack.pop()
                depth -= 1
            continue
        out.append(ch)
    return "".join(out)


def _parameter_list_start(text: str) -> int | None:
    """Index of the '(' that opens the parameter list: the one matching the final ')'."""
    end = len(text.rstrip())
    body = text[:end]
    for suffix in (" const", " volatile"):
        while body.endswith(suffix):
            body = body[: -len(suffix)].rstrip()
    if not body.endswith(")"):
        return None
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        ch = body[i]
        if ch in _CLOSE:
            depth += 1
        elif ch in _OPEN:
            depth -= 1
            if depth == 0:
                return i if ch == "(" else None
    return None


def function_name(kernel_name: str) -> str:
    """The qualified function name of a kernel as ncu printed it.

    >>> function_name("void at::reduce_kernel<128, 4, at::ReduceOp<float>>(T3)")
    'at::reduce_kernel'
    >>> function_name("zoo_coalescing(const float *, float *, int)")
    'zoo_coalescing'
    >>> function_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
    'nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT'
    """
    name = kernel_name.strip()
    if not name:
        return name
    protected, table = _protect(name)
    start = _parameter_list_start(protected)
    head = protected[:start] if start is not None else protected
    head = _strip_top_level(head, "<").strip()
    # What remains is "[return type ]qualified::name"; the name is the last top-level token.
    tokens = head.split()
    result = tokens[-1] if tokens else head
    result = result.lstrip("*&")
    return _restore(result, table) or name
