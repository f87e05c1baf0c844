"""The `perfgate` group: its global options (settings every command reads), the program's
entry point, and the note of the global options in each command's --help."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from perfgate import __version__
from perfgate.cli.console import Settings
from perfgate.cli.parsing import MainGroup
from perfgate.common.escape import log_line
from perfgate.usecases.choices import ColourWhen, values


@click.group(
    cls=MainGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="perfgate")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors (anywhere on the line).")
@click.option(
    "--quiet", "-q", is_flag=True,
    help="Print only the status line (text) and errors; reports and annotations are written "
    "as usual.",
)  # fmt: skip
@click.option(
    "--color", "color", type=click.Choice(values(ColourWhen)), default=ColourWhen.AUTO.value,
    show_default=True,
    help="Colour the text output; auto: on a terminal, unless NO_COLOR is set.",
)  # fmt: skip
@click.option("--no-color", "no_color", is_flag=True, help="Same as --color never.")
@click.pass_context
def main(ctx: click.Context, debug: bool, quiet: bool, color: str, no_color: bool) -> None:
    """Gate GPU kernel performance on Nsight Compute counters.

    \b
    Exit codes: 0 every gated metric holds; 1 a metric regressed, or a baselined
    kernel or metric is missing from the capture; 2 unusable input or usage
    (capture, baseline, options); 3 an internal error.
    """
    from perfgate.usecases.requests import use_colour

    when = ColourWhen.NEVER if no_color else ColourWhen(color)
    ctx.obj = Settings(
        debug=debug,
        quiet=quiet,
        colour=use_colour(when.value, os.environ, sys.stdout.isatty()),
    )


def run() -> None:
    """The `perfgate` program: main(), then out of the process without tearing the
    interpreter down. Freeing a large check's objects one by one (a capture's launches, a
    baseline of 1,000 kernels, 37,000 comparisons) took 0.2 to 0.4 s after the answer was
    known (docs/scale.md). Every file perfgate writes is closed before main() returns, so
    only the standard streams are left to flush. Tests call main() and keep the usual exit."""
    try:
        main()
        code: int = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("text"): Python prints it and exits 1
            sys.stderr.write(log_line(str(exc.code)) + "\n")
            code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (perfgate check | head)
            stream.flush()
    os._exit(code)


def global_options_in_help(group: click.Group) -> None:
    """Each command's --help names the global options it takes (they are hoisted from
    anywhere before a program's `--`): `check --help` omitted -q and --color."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            global_options_in_help(command)
            continue
        note = (
            "Global options, also accepted here: -q/--quiet (the status line only), "
            "--color auto|always|never, --no-color, --debug (tracebacks)."
        )
        command.epilog = f"{command.epilog}\n\n{note}" if command.epilog else note
