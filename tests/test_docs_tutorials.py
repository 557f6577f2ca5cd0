"""The tutorials' code runs: every ```python block of a page in docs/tutorials/ is executed, in page
order and in one namespace, in a fresh working folder, and must draw the figures the page shows.

The code is compiled with the page as its file name and every block at its own line, so a
traceback points at the page's line. Each figure the page shows (``../assets/tutorials/NAME.png``)
must be written by the code as ``NAME.png``; it is copied to ``docs/assets/tutorials/`` for the
docs site. A tutorial that breaks when the API it shows changes fails here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
TUTORIALS = sorted(p for p in (DOCS / "tutorials").glob("*.md") if p.name != "index.md")
ASSETS = DOCS / "assets" / "tutorials"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
FIGURE = re.compile(r"!\[[^\]]*\]\(\.\./assets/tutorials/([\w.-]+\.png)\)")


def page_code(text: str) -> str:
    """The page's python blocks, each at its own line number (everything else blank)."""
    lines = [""] * (text.count("\n") + 1)
    for match in FENCE.finditer(text):
        first = text.count("\n", 0, match.start(1))
        for offset, line in enumerate(match.group(1).splitlines()):
            lines[first + offset] = line
    return "\n".join(lines)


def test_page_code_keeps_the_page_line_numbers():
    text = "# t\n\n```python\nx = 1\n```\n\nprose\n```python\ny = x + 1\n```\n```bash\nls\n```\n"
    code = page_code(text)
    assert code.splitlines()[3] == "x = 1" and code.splitlines()[8] == "y = x + 1"
    assert "ls" not in code and "prose" not in code


def test_there_are_four_tutorials_each_with_code_and_a_figure():
    assert len(TUTORIALS) >= 4
    for page in TUTORIALS:
        text = page.read_text()
        assert FENCE.search(text), f"{page.name}: no python block"
        assert FIGURE.search(text), f"{page.name}: shows no figure from ../assets/tutorials/"


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_and_draws_its_figures(page, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    text = page.read_text()
    monkeypatch.chdir(tmp_path)
    exec(compile(page_code(text), str(page), "exec"), {"__name__": f"tutorial_{page.stem.replace('-', '_')}"})
    ASSETS.mkdir(parents=True, exist_ok=True)
    for name in FIGURE.findall(text):
        drawn = tmp_path / name
        assert drawn.is_file() and drawn.stat().st_size > 5_000, f"{page.name}: the code did not draw {name}"
        shutil.copyfile(drawn, ASSETS / name)
