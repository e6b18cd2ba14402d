"""Folders that output files go to (reports, CSV exports): made, and checked to take files,
before the work whose results they hold, with an error that names what is in the way."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tuner.errors import TunerError


def make_folder(folder: str | Path, what: str) -> Path:
    """Make ``folder`` and its parents and check that a file can be written in it; a
    ``TunerError`` "cannot write WHAT to FOLDER: why" otherwise (a file in the way, no
    permission, a read-only file system)."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise TunerError(f"cannot write {what} to {path}: {why(path, exc)}") from None
    return path


def why(path: Path, exc: OSError) -> str:
    """What keeps files from ``path``: the nearest existing part of it that is a file rather
    than a folder (``mkdir`` says only "File exists" or "Not a directory"), else the error."""
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                return f"{part} is a file, not a folder"
            break
    return f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}"
