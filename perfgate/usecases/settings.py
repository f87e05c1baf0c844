"""The settings types the CLI fills in for a command's request (a record's settings, a
capture's options and clock control, a history run's context, a detection request), named
where the use cases take them so that the CLI imports the use-case layer and common/ only
(tests/docs/test_architecture.py). Imported by the command that needs them, not at start-up."""

from __future__ import annotations

from perfgate.history.context import GivenContext
from perfgate.history.detect import DetectRequest
from perfgate.lifecycle.record import RecordSettings
from perfgate.ncu.command import CaptureOptions, ClockControl

__all__ = ["CaptureOptions", "ClockControl", "DetectRequest", "GivenContext", "RecordSettings"]
