"""Who and when a baseline's change was made: the CI run or git user that makes it, and the
UTC time (SOURCE_DATE_EPOCH fixes it), written into the history entries of the change."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from perfgate.common.errors import UsageError


@dataclass(frozen=True)
class Stamp:
    date: str
    by: str | None


def _git_user() -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = []
        for key in ("user.name", "user.email"):
            proc = subprocess.run(
                [git, "config", "--get", key],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if proc.returncode == 0 and proc.stdout.strip():
                out.append(proc.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None
    if not out:
        return None
    return f"{out[0]} <{out[1]}>" if len(out) == 2 else out[0]


def who(env: Mapping[str, str] | None = None) -> str | None:
    """Who accepts a change: the CI run that does it (the actor and a link to the run), else
    git's configured user, else the login name."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_ACTOR"):
        run = ""
        if (
            env.get("GITHUB_SERVER_URL")
            and env.get("GITHUB_REPOSITORY")
            and env.get("GITHUB_RUN_ID")
        ):
            run = (
                f" ({env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/"
                f"{env['GITHUB_RUN_ID']})"
            )
        return f"{env['GITHUB_ACTOR']} via GitHub Actions{run}"
    if env.get("GITLAB_CI") == "true" and env.get("GITLAB_USER_LOGIN"):
        return f"{env['GITLAB_USER_LOGIN']} via GitLab CI"
    return _git_user() or env.get("USER") or env.get("USERNAME") or None


def now(env: Mapping[str, str] | None = None) -> str:
    """UTC now; SOURCE_DATE_EPOCH (the reproducible-builds convention) fixes it."""
    env = os.environ if env is None else env
    epoch = env.get("SOURCE_DATE_EPOCH")
    moment = dt.datetime.now(dt.timezone.utc)
    if epoch and epoch.isascii() and epoch.isdigit():
        try:
            moment = dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:  # past the year 9999
            raise UsageError(
                f"SOURCE_DATE_EPOCH={epoch[:40]} is not a time perfgate can write "
                "(seconds since 1970, before the year 10000)"
            ) from exc
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(by: str | None = None) -> Stamp:
    return Stamp(now(), by or who())
