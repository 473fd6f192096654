"""The judge installs on its own: a wheel of `scoring` alone, needing numpy and scipy only."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # --no-build-isolation: build with this environment's setuptools, no download.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True, cwd=out)
    (found,) = out.glob("tracecup_scoring-*.whl")
    return found


def test_the_wheel_holds_the_judge_and_nothing_of_the_platform(wheel):
    import scoring
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.split("/")[0] for n in names if not n.startswith("tracecup_scoring-")}
    assert packages == {"scoring"}
    assert "scoring/preview.py" in names and "scoring/algorithms/attacks.py" in names
    # The judge alone: the benchmarks are developer tools (bench/), not what a team installs.
    assert not [n for n in names if "bench" in Path(n).stem], names
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("METADATA"))).decode()
    requires = sorted(line.split(":", 1)[1].strip().split(">")[0].split("=")[0].split("<")[0].strip()
                      for line in metadata.splitlines() if line.startswith("Requires-Dist:"))
    assert requires == ["numpy", "scipy"]
    assert f"Version: {scoring.__version__}" in metadata


def test_every_judge_module_imports_without_the_platform(wheel, tmp_path):
    # Install the wheel's files alone in a folder and import every module with
    # Django, Celery and DRF made unimportable: the judge must not need them.
    zipfile.ZipFile(wheel).extractall(tmp_path)
    modules = sorted(".".join(p.relative_to(tmp_path).with_suffix("").parts)
                     for p in (tmp_path / "scoring").rglob("*.py") if p.name != "__main__.py")
    code = (
        "import sys, importlib\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('django', 'celery', 'rest_framework', 'contest', 'synth'):\n"
        "            raise ImportError('the judge must not import ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    help_text = subprocess.run([sys.executable, "-m", "scoring", "preview", "--help"], cwd=tmp_path,
                               capture_output=True, text=True, check=True).stdout
    assert "REFERENCE ORIGINAL ANONYMIZED" in help_text
