"""Kernel identity from the names ncu prints.

ncu prints demangled C++ signatures by default ("void at::reduce_kernel<512, 1, ...>(T3)").
Baselines match kernels by their function name (the qualified name without return type,
template arguments and parameters), by the exact demangled name, or by a regular expression.
"""

from __future__ import annotations

import re

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
    # A capture repeats a few names over thousands of launches: each is worked out once.
    known = _FUNCTION_NAMES.get(kernel_name)
    if known is None:
        if len(_FUNCTION_NAMES) > 65536:
            _FUNCTION_NAMES.clear()
        known = _FUNCTION_NAMES[kernel_name] = _function_name(kernel_name)
    return known


_FUNCTION_NAMES: dict[str, str] = {}


def _function_name(kernel_name: str) -> str:
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


# ------------------------------------------------------------------------------ identity keys

# Parts of a name that change while the kernel does not (seen in real captures):
# - a lambda's instance number counts the lambdas of its enclosing function, so adding an
#   unrelated lambda above it renumbers it: "[lambda(float) (instance 1)]" -> "(instance 2)";
#   GCC spells the same "{lambda(float)#1}";
# - the anonymous namespace has three spellings across demanglers;
# - Inductor numbers its generated kernels per graph: "triton_poi_fused_add_mul_relu_1" becomes
#   "..._0" after an unrelated change to the graph.
# - XLA numbers its fusions per module, the first of a name unnumbered: "loop_add_fusion",
#   "loop_add_fusion_1", "gemm_fusion_dot_general_12", "wrapped_transpose_3"; a change elsewhere
#   in the program renumbers them (jax-train -> jax-remat, tests/data/field/families:
#   gemm_fusion_dot_general_8 -> _10, loop_multiply_fusion -> loop_multiply_fusion_2).
# Template arguments and parameter types stay: they are what makes two instantiations
# different kernels.
_INSTANCE = re.compile(r"\(instance \d+\)")
_GCC_LAMBDA = re.compile(r"(\{lambda\([^{}]*\))#\d+\}")
_ANON = re.compile(r"\(anonymous namespace\)|\{anonymous\}")
_INDUCTOR = re.compile(r"^(triton_(?:poi|red|per|tem|for|mm|bmm)_\w*?)_\d+$")
_SPACES = re.compile(r"\s+")
# An XLA kernel's name is a bare identifier: a fusion ("loop_add_fusion", "input_reduce_fusion",
# "gemm_fusion_dot_3", "fusion_12") or an op wrapped for its emitter ("wrapped_transpose").
# Inductor's "fused" names are not XLA's (its rule comes first).
_XLA = re.compile(r"^((?:[a-z]\w*_)?fusion(?:_[a-z]\w*?)?|wrapped_[a-z]\w*?)(?:_\d+)?$")


def normalise(name: str) -> str:
    """The name with the parts that change without the kernel changing made neutral.

    >>> normalise("void f<[lambda(float) (instance 2)]>(int)")
    'void f<[lambda(float) (instance #)]>(int)'
    >>> normalise("triton_poi_fused_add_mul_relu_1")
    'triton_poi_fused_add_mul_relu_#'
    >>> normalise("void at::(anonymous namespace)::k<{lambda(int)#3}>()")
    'void at::<unnamed>::k<{lambda(int)#}>()'
    >>> normalise("gemm_fusion_dot_general_12"), normalise("loop_add_fusion")
    ('gemm_fusion_dot_general_#', 'loop_add_fusion_#')
    """
    text = _spelled(name)
    inductor = _INDUCTOR.sub(r"\1_#", text)
    return inductor if inductor != text else _XLA.sub(r"\1_#", text)


def _spelled(name: str) -> str:
    """The name with its lambda instances and anonymous namespaces spelled one way."""
    text = _SPACES.sub(" ", name.strip())
    text = _INSTANCE.sub("(instance #)", text)
    text = _GCC_LAMBDA.sub(r"\1#}", text)
    return _ANON.sub("<unnamed>", text)


def unqualified(name: str) -> str:
    """normalise(name) without any namespace or class qualifier: a diagnosis capture's names,
    which ncu printed without them (`--kernel-name-base function` and `--launch-count` on ncu
    2025.3.1, H100: `void vectorized_gather_kernel<16, long>(char *, ...)` where the gate
    capture of the same program printed `void at::native::vectorized_gather_kernel<...`).

    >>> unqualified("void at::native::k<at::<unnamed>::F<long>>(int)")
    'void k<F<long>>(int)'

    Seen in the same pair: ncu stripped `at::<unnamed>::F` to `unnamed>::F` (the qualifier cut
    at its `<`), so that spelling goes too:

    >>> unqualified("void k<AUnaryFunctor<long, bool, unnamed>::F<long>>>(int)")
    'void k<AUnaryFunctor<long, bool, F<long>>>(int)'
    """
    bare = normalise(name).replace("<unnamed>::", "").replace("unnamed>::", "")
    return _QUALIFIER.sub("", bare)


def _template_arguments(text: str) -> list[str]:
    """The top-level template arguments of `name<...>` (the first '<' group)."""
    start = text.find("<")
    if start < 0:
        return []
    args: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text[start + 1 :]:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if current:
        args.append("".join(current).strip())
    return args


_QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*::)+")
# The name starts at a word boundary: from every letter of a 32 KB word, `\w*` scanned the rest
# of it (quadratic: 20 s for one lambda-style name; issue 23).
_ENCLOSING = re.compile(r"(?<!\w)([A-Za-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)\s*::\s*\[lambda")
_MAX_ARG = 28
_MAX_ARGS = 3  # the distinguishing arguments come first in every library seen


def _short_argument(arg: str) -> str:
    """A template argument as a person would name it: a lambda by the function that holds
    it ('GeluCUDAKernelImpl'), a type without its namespaces, long ones cut."""
    if "lambda" in arg and not re.match(r"^[\w:]+<", arg):
        enclosing = _ENCLOSING.search(_ANON.sub("anon", arg).replace("<unnamed>", "anon"))
        if enclosing:
            inner = re.findall(r"lambda\(([^()]*)\)", arg)
            typed = f"({_QUALIFIER.sub('', inner[-1])})" if inner and inner[-1] else ""
            return enclosing.group(1) + typed
        return "lambda"
    arg = _QUALIFIER.sub("", arg.replace("<unnamed>::", ""))
    return arg if len(arg) <= _MAX_ARG else arg[: _MAX_ARG - 1] + "…"


def short_name(name: str) -> str:
    """A readable name for ids and headings: the function without namespaces, with its
    template arguments shortened; names without templates stay whole.

    >>> short_name("void at::vectorized_elementwise_kernel<8, at::GeluCUDAKernelImpl("
    ...     "at::TensorIteratorBase &, at::GeluType)::[lambda() (instance 2)]::operator ()() "
    ...     "const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>>(int, T2, T3)")
    'vectorized_elementwise_kernel<8, GeluCUDAKernelImpl(BFloat16), array<char *, 2>>'
    >>> short_name("zoo_coalescing(const float *, float *, int)")
    'zoo_coalescing'
    """
    # XLA's fusion number stays: the names are bare identifiers, told apart by the number alone.
    text = normalise(name) if _XLA.match(_spelled(name)) is None else _spelled(name)
    function = function_name(text)
    base = function.rsplit("::", 1)[-1] if "::" in function else function
    protected, table = _protect(text)
    start = _parameter_list_start(protected)
    head = _restore(protected[:start] if start is not None else protected, table)
    at = head.find(base)
    args = _template_arguments(head[at:]) if at >= 0 else []
    if not args:
        return base
    shown = [_short_argument(a) for a in args[:_MAX_ARGS]]
    if len(args) > _MAX_ARGS:
        shown.append("…")
    return f"{base}<{', '.join(shown)}>"
