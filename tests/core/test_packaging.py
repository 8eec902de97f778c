"""Each wheel ships a LICENSE, its README as the long description and project URLs; the
workspace's installed distributions are consistent (what `pip check` checks).

The wheels are built offline with the hatchling installed in the workspace venv, exactly as
`uv build` would build them, and inspected as a package index would read them.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "episodex": ROOT / "packages" / "episodex",
    "langchain-episodex": ROOT / "integrations" / "langchain",
    "llama-index-memory-episodex": ROOT / "integrations" / "llama-index",
}
URL_LABELS = {"Homepage", "Documentation", "Repository", "Issues"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    built: dict[str, Path] = {}
    for name, folder in PACKAGES.items():
        target = out / name
        subprocess.run(
            [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(target)],
            cwd=folder,
            check=True,
            capture_output=True,
            timeout=300,
        )
        (wheel,) = target.glob("*.whl")
        built[name] = wheel
    return built


@pytest.mark.parametrize("name", list(PACKAGES))
def test_each_wheel_carries_license_readme_and_urls(name: str, wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels[name]) as wheel:
        names = wheel.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        dist_info = metadata_name.removesuffix("METADATA")
        license_text = wheel.read(f"{dist_info}licenses/LICENSE").decode("utf-8")
        metadata = email.parser.Parser().parsestr(wheel.read(metadata_name).decode("utf-8"))
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    assert license_text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert metadata["Name"] == name
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]

    readme = (PACKAGES[name] / "README.md").read_text(encoding="utf-8")
    description = metadata.get_payload()
    assert isinstance(description, str)
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert description.strip() == readme.strip()
    assert len(readme) > 2000 and readme.startswith("# "), "a real README, not a pointer"

    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert set(urls) == URL_LABELS
    assert all(u.startswith("https://") for u in urls.values())


def test_the_core_readme_is_the_repository_readme() -> None:
    core = (PACKAGES["episodex"] / "README.md").read_text(encoding="utf-8")
    assert core == (ROOT / "README.md").read_text(encoding="utf-8")


def test_installed_distributions_satisfy_each_other() -> None:
    # What `pip check` verifies, done in process (the venv is built by uv and has no pip):
    # every requirement of every installed distribution is installed at a matching version.
    installed = {
        canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    problems: list[str] = []
    for dist in importlib.metadata.distributions():
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            version = installed.get(canonicalize_name(req.name))
            if version is None:
                problems.append(f"{dist.metadata['Name']} requires {req}, which is not installed")
            elif not req.specifier.contains(version, prereleases=True):
                problems.append(
                    f"{dist.metadata['Name']} requires {req}, but {version} is installed"
                )
    assert problems == []
