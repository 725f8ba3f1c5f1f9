"""This package as something another machine installs: its wheel and its pinned requirements.

:func:`build_wheel` writes a PEP 427 wheel of the ``autograder`` package (every module
and the shipped manifests) straight from the package folder, offline and reproducibly
(fixed timestamps), so no build backend has to be downloaded. :func:`pinned_requirements`
lists ``name==version`` for every distribution this package needs, transitively, as
installed in the running environment, i.e. the versions the tests ran with.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.metadata as metadata
import sys
import zipfile
from pathlib import Path

from ... import __version__
from ...errors import CourseError
from ...settings import PACKAGE_DIR

__all__ = ["DIST_NAME", "build_wheel", "pinned_requirements", "python_minor", "wheel_name",
           "write_zip"]

DIST_NAME = "attention-autograder"
PACKAGE = PACKAGE_DIR
#: Files of the package that go into the wheel besides its modules (pyproject's package-data).
DATA_PATTERNS = ("manifests/*.json",)
_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_zip(path: Path, entries: list[tuple[str, bytes, int]]) -> None:
    """Write ``(name, data, mode)`` entries as a deflated zip with fixed timestamps (the
    same bytes in, the same zip out) and each file's Unix mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in entries:
            item = zipfile.ZipInfo(name, _EPOCH)
            item.external_attr = (0o100000 | mode) << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(item, data)


def python_minor() -> str:
    """``3.11``: the interpreter the pins were taken from (the bundle installs the same)."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def wheel_name() -> str:
    return f"{DIST_NAME.replace('-', '_')}-{__version__}-py3-none-any.whl"


def _project() -> dict:
    """``[project]`` of the checkout's pyproject.toml, else the installed metadata."""
    pyproject = PACKAGE.parent / "pyproject.toml"
    if pyproject.is_file():
        try:
            import tomllib
        except ImportError:  # Python 3.10: the same parser, as a package (a dependency there)
            import tomli as tomllib

        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    try:
        meta = metadata.metadata(DIST_NAME)
    except metadata.PackageNotFoundError:
        raise CourseError("neither a checkout (pyproject.toml) nor an installed "
                          f"{DIST_NAME}: run this from the repository") from None
    return {"name": DIST_NAME, "version": __version__, "description": meta.get("Summary", ""),
            "requires-python": meta.get("Requires-Python", ">=3.10"),
            "dependencies": metadata.requires(DIST_NAME) or [],
            "scripts": {"autograder": "autograder.cli:main"}}


def _package_files() -> list[Path]:
    files = {p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    for pattern in DATA_PATTERNS:
        files.update(PACKAGE.glob(pattern))
    return sorted(files)


def _metadata_text(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {DIST_NAME}", f"Version: {__version__}",
             f"Summary: {project.get('description', '')}",
             f"Requires-Python: {project.get('requires-python', '>=3.10')}"]
    lines += [f"Requires-Dist: {dep}" for dep in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(out_dir: Path) -> Path:
    """Write the wheel into ``out_dir``; returns its path. The manifests must be present."""
    if not list(PACKAGE.glob("manifests/*.json")):
        raise CourseError(f"no manifests in {PACKAGE / 'manifests'}: run `autograder build`")
    project = _project()
    info = f"{DIST_NAME.replace('-', '_')}-{__version__}.dist-info"
    scripts = project.get("scripts", {})
    entries: list[tuple[str, bytes]] = [
        (f"autograder/{p.relative_to(PACKAGE).as_posix()}", p.read_bytes())
        for p in _package_files()]
    entries += [
        (f"{info}/METADATA", _metadata_text(project).encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: autograder.integrations.gradescope.wheel\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{info}/entry_points.txt", ("[console_scripts]\n" + "".join(
            f"{k} = {v}\n" for k, v in scripts.items())).encode()),
        (f"{info}/top_level.txt", b"autograder\n")]
    record = [_record_line(name, data) for name, data in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    path = out_dir / wheel_name()
    write_zip(path, [(name, data, 0o644) for name, data in entries])
    return path


# ------------------------------------------------------------------ pins


def _imported_distributions() -> set[str]:
    """Distributions the package's modules import that pyproject may not declare."""
    top = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                top.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top.add(node.module.split(".")[0])
    owners = metadata.packages_distributions()
    return {dist for name in top - {"autograder"} for dist in owners.get(name, [])}


def _closure(requirements: list[str]) -> dict[str, str]:
    """name -> installed version for ``requirements`` and everything they require."""
    from packaging.requirements import Requirement

    pinned: dict[str, str] = {}
    todo = [(Requirement(r), ("",)) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue
        key = req.name.lower().replace("_", "-")
        if key in pinned:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise CourseError(f"dependency {req.name} is not installed here: run "
                              "`pip install -e .` first, so the bundle pins what was tested"
                              ) from None
        pinned[key] = dist.version
        todo += [(Requirement(r), ("", *sorted(req.extras))) for r in dist.requires or []]
    return pinned


def pinned_requirements() -> list[str]:
    """``name==version`` lines for a requirements file (this environment's versions)."""
    wanted = list(_project().get("dependencies", [])) + sorted(_imported_distributions())
    return [f"{name}=={version}" for name, version in sorted(_closure(wanted).items())]
