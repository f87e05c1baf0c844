"""A run's context: what the command line says, else what the CI environment says.

Only GitHub Actions' variables are read (the Action's home); elsewhere, pass --commit,
--branch, --pull-request, --ci-job and --run-id."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from perfgate.history.model import RunContext


@dataclass(frozen=True)
class GivenContext:
    """What the command line gave; None: take it from the environment, if it says."""

    run_id: str | None = None
    commit: str | None = None
    branch: str | None = None
    pull_request: str | None = None
    ci_job: str | None = None


_PULL = re.compile(r"refs/pull/(\d+)/")


def _github_run_id(env: Mapping[str, str]) -> str | None:
    run, job = env.get("GITHUB_RUN_ID"), env.get("GITHUB_JOB")
    if not run:
        return None
    # A re-run of the job is another run (attempt), not the same one stored twice.
    return f"github:{run}:{env.get('GITHUB_RUN_ATTEMPT') or '1'}:{job or ''}"


def context(given: GivenContext, env: Mapping[str, str], recorded_at: str) -> RunContext:
    """The context of a run checked now. Without a run id from the command line or CI, a
    fresh one: nothing else tells two runs of one commit apart."""
    pull = _PULL.match(env.get("GITHUB_REF", ""))
    return RunContext(
        run_id=given.run_id or _github_run_id(env) or f"run:{uuid.uuid4()}",
        recorded_at=recorded_at,
        commit=given.commit or env.get("GITHUB_SHA") or None,
        branch=given.branch or env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or None,
        pull_request=given.pull_request or (pull.group(1) if pull else None),
        ci_job=given.ci_job or env.get("GITHUB_JOB") or None,
    )


def imported_context(given: GivenContext, content: bytes, mtime: float) -> RunContext:
    """The context of a JSON result imported: without --run-id, one named by the file's
    content, and the file's time, so importing one file twice is the same run (idempotent).
    The environment is not read: the import may run long after, elsewhere."""
    return RunContext(
        run_id=given.run_id or f"json:{hashlib.sha256(content).hexdigest()[:24]}",
        recorded_at=datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="microseconds"),
        commit=given.commit,
        branch=given.branch,
        pull_request=given.pull_request,
        ci_job=given.ci_job,
    )
