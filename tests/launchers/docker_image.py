"""A test image holding this machine's own Python, made without any registry.

The interpreter, its standard library (without tests and site-packages) and the shared
libraries they link to are packed at their own absolute paths into a root filesystem tarball
and imported with ``docker import``. Inside a container, ``os.path.realpath(sys.executable)``
then runs the same Python as outside.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

PYTHON = os.path.realpath(sys.executable)
SKIP = {
    "site-packages",
    "test",
    "tests",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "__pycache__",
    "dist-packages",
}


def _linked_libraries(binary: Path) -> set[str]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    found = set(re.findall(r"=> (/\S+)", out))
    found |= {m for m in re.findall(r"^\s*(/\S+)", out, re.M)}
    return found


def build_rootfs(target: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    binaries = [Path(PYTHON), *stdlib.joinpath("lib-dynload").glob("*.so")]
    libraries: set[str] = set()
    for binary in binaries:
        libraries |= _linked_libraries(binary)
    with tarfile.open(target, "w") as tar:
        tar.add(PYTHON, arcname=PYTHON.lstrip("/"))
        for root, dirs, files in os.walk(stdlib):
            dirs[:] = [d for d in dirs if d not in SKIP]
            for name in files:
                path = os.path.join(root, name)
                tar.add(path, arcname=path.lstrip("/"), recursive=False)
        for lib in sorted(libraries):
            tar.add(os.path.realpath(lib), arcname=lib.lstrip("/"))
        for folder, mode in (
            ("tmp", 0o1777),
            ("etc", 0o755),
            ("proc", 0o755),
            ("sys", 0o755),
            ("dev", 0o755),
        ):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        passwd = b"root:x:0:0:root:/root:/nonexistent\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return target


def build_image(client: object, tag: str, folder: Path) -> str:
    """Import the root filesystem as ``tag`` (once per engine) and return the tag."""
    api = client.api  # type: ignore[attr-defined]
    if any(tag in (image.tags or []) for image in client.images.list()):  # type: ignore[attr-defined]
        return tag
    tarball = build_rootfs(folder / "rootfs.tar")
    repository, _, version = tag.partition(":")
    api.import_image_from_file(str(tarball), repository=repository, tag=version or "latest")
    return tag
