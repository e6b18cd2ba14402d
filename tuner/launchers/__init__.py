"""Launchers: where training jobs run. ``make_launcher`` builds one from a job definition."""

from tuner.launchers.base import JobStatus, Launcher, LaunchSpec
from tuner.launchers.local import LocalLauncher

__all__ = ["JobStatus", "LaunchSpec", "Launcher", "LocalLauncher"]
