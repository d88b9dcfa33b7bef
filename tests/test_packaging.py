"""An installed package carries what the tools read at run time: the grammar and the corpus.

setuptools' `build_py` lays out exactly the files a wheel installs (packages and package
data) and `egg_info` writes the entry points; both run offline on a copy of the sources, so
the checkout gets no build/ or egg-info folders and no network is needed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tlinterp", "tlgpu", "fuzz", "corpus")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools")
    top = tmp_path_factory.mktemp("packaging")
    src = top / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q",
                    "build_py", "--build-lib", str(top / "lib"), "egg_info", "--egg-base",
                    str(top)], cwd=src, check=True, capture_output=True, timeout=120)
    return top


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_the_package_carries_grammar_corpus_and_tools(built):
    installed = _files(built / "lib")
    assert "tlinterp/lang/v03/grammar.peg" in installed
    assert {"tlinterp/cli/tlrun.py", "fuzz/strategies.py", "fuzz/conform/cli.py",
            "tlgpu/runtime/launch.py"} <= installed
    for kind in ("valid", "invalid", "undefined"):
        in_tree = {f"corpus/{kind}/{f}" for f in _files(ROOT / "corpus" / kind)}
        assert in_tree and in_tree <= installed, kind
    (egg_info,) = built.glob("*.egg-info")
    entry_points = (egg_info / "entry_points.txt").read_text()
    for tool in ("tlrun", "tlfuzz", "tlconform"):
        assert f"{tool} = " in entry_points
