"""How the CLI reads its command line beyond click's own parsing: the options several
commands share, the global options hoisted from after the subcommand, and the commands that
run a program given last (what follows it is the program's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def capture_files_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--capture",
        "-c",
        "captures",
        required=True,
        multiple=True,
        type=click.Path(),
        help=help_text,
    )


def compute_capability(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """MAJOR.MINOR as ncu prints it: a typo must not print another architecture's list."""
    import re

    if not re.fullmatch(r"[1-9][0-9]?\.[0-9]", value):
        raise click.BadParameter(f"{value!r} is not a compute capability such as 8.0 or 9.0")
    return value


kernels_option = click.option(
    "--kernel",
    "-k",
    "kernels",
    multiple=True,
    help="Only kernels whose name matches this regex (repeatable).",
)


# Options of the whole program that a user may also type after the subcommand
# (`perfgate check ... --debug`): moved in front of it before click parses. Only arguments
# before a lone `--` are looked at: what follows it belongs to a program perfgate runs.
_GLOBAL_FLAGS = ("--debug", "--quiet", "-q", "--no-color")
_GLOBAL_VALUED = ("--color",)


def hoist_global_options(args: list[str], end: int | None = None) -> list[str]:
    """`end`: where a program's own arguments begin (a lone `--` by default)."""
    if end is None:
        end = args.index("--") if "--" in args else len(args)
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < end:
        arg = args[i]
        if arg in _GLOBAL_FLAGS:
            hoisted.append(arg)
        elif arg.partition("=")[0] in _GLOBAL_VALUED:
            if "=" in arg or i + 1 >= end:
                hoisted.append(arg)
            else:
                hoisted.extend((arg, args[i + 1]))
                i += 1
        else:
            rest.append(arg)
        i += 1
    return hoisted + rest + args[end:]


def _takes_value(command: click.Command) -> dict[str, bool]:
    out = {name: True for name in _GLOBAL_VALUED}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                out[name] = not param.is_flag and not param.count
    return out


def _program_start(group: click.Group, args: list[str]) -> int | None:
    """Where the program of `perfgate capture ./bench -q` (a command that runs one) begins:
    its first argument that is neither an option nor an option's value. What follows is the
    program's, as `--` would say: `-q` there is the program's flag, not perfgate's."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":  # perfgate's own
        i += 2 if args[i] in _GLOBAL_VALUED else 1
    command = group.commands.get(args[i]) if i < len(args) else None
    if command is None or not any(p.name == "program" for p in command.params):
        return None
    values = _takes_value(command)
    i += 1
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return i
        name, eq, _ = arg.partition("=")
        i += 2 if values.get(name) and not eq else 1
    return None


def _misplaced(command: click.Command, args: list[str], param: click.Parameter | None) -> str:
    """The hint for a required option that was given after the program (`perfgate capture
    -- ./app -b x.yaml`), where it is the program's argument; "" when it was not given."""
    if param is None:
        return ""
    values = _takes_value(command)
    i = 0
    while i < len(args) and args[i] != "--" and args[i].startswith("-") and args[i] != "-":
        name, eq, _ = args[i].partition("=")
        i += 2 if values.get(name) and not eq else 1
    program = args[i + 1 :] if i < len(args) and args[i] == "--" else args[i:]
    names = [n for n in param.opts if n.startswith("-")]
    for j, arg in enumerate(program):
        if arg in names or any(arg.startswith(f"{n}=") for n in names if n.startswith("--")):
            given = " ".join(program[j : j + (1 if "=" in arg else 2)])
            return (
                f"{given} comes after the program ({program[0]}), so it is the program's "
                f"argument: give perfgate's options before the program: perfgate "
                f"{command.name} {given} ... -- {program[0]} ..."
            )
    return ""


class ProgramCommand(click.Command):
    """A command that runs a program given last (capture, pre-merge): a required option
    missing because it was typed after the program says so, naming it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))
        except click.MissingParameter as exc:
            hint = _misplaced(self, args, exc.param)
            if not hint:
                raise
            raise click.UsageError(f"{exc.format_message()} {hint}", ctx) from exc


class MainGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args, _program_start(self, args)))
