"""What the distribution installs: tff_esn, tuning and discriminator, not the repository's scripts/; esnfed only
with the ``compare`` extra; ``tff-esn reproduce`` finds scripts/ in the clone beside tff_esn."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from tff_esn.cli import UsageError, reproduce

ROOT = Path(__file__).resolve().parent.parent


def _setup() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


def test_scripts_is_no_installed_package_and_esnfed_an_extra():
    setup = _setup()
    included = setup["options.packages.find"]["include"].split()
    assert set(included) == {"tff_esn", "tff_esn.*", "tuning", "tuning.*", "discriminator", "discriminator.*"}
    requires = setup["options"]["install_requires"]
    extras = setup["options.extras_require"]
    assert "esnfed" not in requires and "esnfed==1.7.1" in extras["compare"].split()
    assert "esnfed==1.7.1" in extras["test"].split()
    assert "scripts" not in setup["options.entry_points"]["tff_esn.commands"]


def test_reproduce_imports_the_clones_scripts_package():
    module = reproduce.reproduction()
    assert Path(module.__file__).resolve() == ROOT / "scripts" / "cli.py"


def test_reproduce_outside_a_clone_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "__file__", str(tmp_path / "site" / "tff_esn" / "cli" / "reproduce.py"))
    with pytest.raises(UsageError, match=f"runs from a clone of the repository.*{tmp_path / 'site'} holds none"):
        reproduce.reproduction()
