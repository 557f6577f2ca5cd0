"""Result tables of mean ± std over seeds, as Markdown and as LaTeX (booktabs), with a caption and the best
value of each column marked (bold).

A :class:`Table` holds numbers, not text: each cell the values of its seeds; :meth:`Table.markdown` and
:meth:`Table.latex` format them the same way.
"""

from __future__ import annotations

import dataclasses
import math
import numpy as np


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell: its seeds' ``values`` (``None``: failed), the seeds expected, a ``flag`` mark (empty: none)."""

    values: tuple[float | None, ...]
    expected: int
    flag: str = ""

    @property
    def finite(self) -> np.ndarray:
        """The cell's finite values."""
        return np.array([v for v in self.values if v is not None and math.isfinite(v)], np.float64)

    @property
    def mean(self) -> float:
        """Mean over the finite values (NaN without any)."""
        return float(self.finite.mean()) if self.finite.size else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation over the finite values (NaN without any)."""
        return float(self.finite.std()) if self.finite.size else math.nan

    def text(self, scale: float = 1.0, digits: int = 3, pm: str = " ± ") -> str:
        """``mean ± std`` (× ``scale``), ``(n/expected)`` when seeds are missing, then the flag; ``failed``."""
        n = self.finite.size
        if n == 0:
            return "failed"
        return (f"{scale * self.mean:.{digits}f}{pm}{scale * self.std:.{digits}f}"
                + ("" if n == self.expected else f" ({n}/{self.expected})") + (f" {self.flag}" if self.flag else ""))


@dataclasses.dataclass(frozen=True)
class Table:
    """A caption, column heads, and rows ``(label, cells, extra)``: ``cells`` one per numeric column (the best
    mean of each column marked: highest, or lowest when ``lower_is_better``), ``extra`` further plain text."""

    caption: str
    label_head: str
    heads: tuple[str, ...]
    rows: tuple[tuple[str, tuple[Cell | None, ...], tuple[str, ...]], ...]
    extra_heads: tuple[str, ...] = ()
    lower_is_better: bool = False
    scale: float = 1.0
    digits: int = 3
    marked: tuple[str, ...] = ()
    """Row labels that take part in the best-of-column mark (empty: every row)."""

    def best(self) -> list[float]:
        """Per numeric column, the best mean among the marked rows (NaN: none)."""
        out = []
        for j in range(len(self.heads)):
            means = [cells[j].mean for label, cells, _ in self.rows
                     if cells[j] is not None and (not self.marked or label in self.marked)]
            means = [m for m in means if math.isfinite(m)]
            out.append((min(means) if self.lower_is_better else max(means)) if means else math.nan)
        return out

    def _cells(self, bold, pm: str) -> list[list[str]]:
        best = self.best()
        lines = []
        for label, cells, extra in self.rows:
            texts = []
            for j, cell in enumerate(cells):
                if cell is None:
                    texts.append("—")
                    continue
                text = cell.text(self.scale, self.digits, pm)
                marked = not self.marked or label in self.marked
                texts.append(bold(text) if marked and math.isfinite(cell.mean) and cell.mean == best[j] else text)
            lines.append([label, *texts, *extra])
        return lines

    def markdown(self) -> str:
        """The caption as a paragraph, then the table (best values in ``**bold**``)."""
        heads = [self.label_head, *self.heads, *self.extra_heads]
        lines = [self.caption, "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(row) + " |" for row in self._cells(lambda t: f"**{t}**", " ± ")]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        """A ``table`` environment with ``\\caption``, ``booktabs`` rules and ``\\textbf`` best values."""
        heads = [self.label_head, *self.heads, *self.extra_heads]
        body = self._cells(lambda t: f"\\textbf{{{t}}}", " $\\pm$ ")
        lines = ["\\begin{table}[t]", "\\centering", f"\\caption{{{latex_escape(self.caption)}}}",
                 "\\begin{tabular}{l" + "r" * (len(heads) - 1) + "}", "\\toprule",
                 " & ".join(latex_escape(h) for h in heads) + " \\\\", "\\midrule"]
        lines += [" & ".join(_latex_cell(c) for c in row) + " \\\\" for row in body]
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(lines) + "\n"


_LATEX = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
          "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "±": "$\\pm$", "α": "$\\alpha$",
          "λ": "$\\lambda$", "≥": "$\\geq$", "→": "$\\rightarrow$", "²": "$^2$", "⚠": "(!)", "—": "--",
          "ℓ": "$\\ell$", "×": "$\\times$"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters (and the Greek and symbols our labels use) escaped."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def _latex_cell(text: str) -> str:
    """A formatted cell: its ``\\textbf{…}`` and ``$\\pm$`` kept, the rest escaped."""
    if text.startswith("\\textbf{") and text.endswith("}"):
        return f"\\textbf{{{_latex_cell(text[8:-1])}}}"
    return " $\\pm$ ".join(latex_escape(part) for part in text.split(" $\\pm$ "))

