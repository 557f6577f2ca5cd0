"""Generates the API reference at build time (mkdocs-gen-files): one page per public module of the
packages below, found by walking their source tree, so a moved or renamed module needs no edit here.

A module is public when no part of its dotted path starts with ``_`` (``__init__`` stands for its
package). The nav (``reference/SUMMARY.md``, read by mkdocs-literate-nav) mirrors the package tree.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tff_esn", "tuning", "discriminator")


def public_modules(package: str) -> list[tuple[str, ...]]:
    """Dotted paths (as tuples) of the public modules under ``ROOT/package``, sorted."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue
        found.append(parts)
    return sorted(found)


def write_reference() -> None:
    """Writes ``reference/<module path>.md`` (a mkdocstrings ``:::`` block) per public module and
    ``reference/SUMMARY.md``, the section's nav."""
    import mkdocs_gen_files

    nav = mkdocs_gen_files.Nav()
    for package in PACKAGES:
        for parts in public_modules(package):
            is_package = (ROOT / Path(*parts)).is_dir()
            page = Path("reference", *parts, "index.md") if is_package else Path("reference", *parts).with_suffix(".md")
            nav[parts] = page.relative_to("reference").as_posix()
            with mkdocs_gen_files.open(page, "w") as out:
                out.write(f"::: {'.'.join(parts)}\n")
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as out:
        out.writelines(nav.build_literate_nav())


if __name__ in ("__main__", "<run_path>"):  # run by mkdocs-gen-files (runpy.run_path)
    write_reference()
