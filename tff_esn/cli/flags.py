"""Flags generated from config settings, and the typed config they map to.

Help, choices and default come from the field; a boolean is ``--name`` or ``--no-name`` (both when its own-data
default differs), ``none`` sets an optional one to ``None``. :data:`GIVEN` records which settings were given
(:func:`given`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tff_esn.registry.algorithms import Algorithm
from tff_esn.cli import UsageError
from tff_esn.data.source_names import OWN_DATA_SOURCES
from tff_esn.common.settings import Setting

GIVEN = "given_settings"
"""The namespace attribute holding the names of the settings given on the command line."""


class _Given(argparse.Action):
    """Stores a setting's value and notes that it was given."""

    def __init__(self, option_strings, dest, setting: Setting, **kwargs):
        self.setting = setting
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        setattr(namespace, GIVEN, getattr(namespace, GIVEN, frozenset()) | {self.setting.name})


def _shown(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return "none" if value is None else str(value)


def _parser(setting: Setting):
    def parse(text: str) -> Any:
        try:
            return setting.parse(text)
        except (TypeError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = setting.name  # argparse names the type in its "invalid ... value" message
    return parse


def setting_help(setting: Setting, own_data: Any = None) -> str:
    """The setting's help with its default (and its own-data default, when it has one)."""
    text = setting.help.rstrip(".")
    default = f"default {_shown(setting.default)}" if setting.default is not None or own_data is not None else ""
    if own_data is not None:
        default += f"; {_shown(own_data)} on {'/'.join(k + ':' for k in OWN_DATA_SOURCES)} data"
    return f"{text} ({default})" if default else text


def add_setting_flags(parser: argparse.ArgumentParser, settings: Mapping[str, Setting], *,
                      skip: Iterable[str] = (), own_data: Mapping[str, Any] | None = None,
                      title: str = "settings") -> None:
    """One flag per setting but ``skip``, grouped by nested config; ``own_data``: own-data defaults shown too."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for name, s in settings.items():
        if name in skip:
            continue
        if s.group not in groups:
            groups[s.group] = parser.add_argument_group(s.group or title)
        group = groups[s.group]
        if isinstance(s.default, bool) and s.kinds == (bool,):
            flag = s.flag if not s.default else "--no-" + s.flag[2:]
            state = "on by default; this flag turns it off" if s.default else "off by default"
            own = (own_data or {}).get(name)
            if own is not None and own != s.default:
                state += f"; {'on' if own else 'off'} on {'/'.join(k + ':' for k in OWN_DATA_SOURCES)} data"
                other = s.flag if s.default else "--no-" + s.flag[2:]
                group.add_argument(other, action=_Given, setting=s, dest=name, nargs=0, const=s.default,
                                   default=s.default, help=f"the opposite of {flag}")
            group.add_argument(flag, action=_Given, setting=s, dest=name, nargs=0, const=not s.default,
                               default=s.default, help=f"{s.help.rstrip('.')} ({state})".replace("%", "%%"))
        else:
            help = setting_help(s, (own_data or {}).get(name))
            choices = s.choices if len(s.kinds) == 1 else None  # float | str: the parser checks the strings
            metavar = s.field.metadata.get("metavar") or ("{" + ",".join(map(str, choices)) + "}" if choices
                                                          else name.upper())
            group.add_argument(s.flag, action=_Given, setting=s, dest=name, type=_parser(s), choices=choices,
                               default=s.default, metavar=metavar, help=help.replace("%", "%%"))


def add_algorithm_flags(parser: argparse.ArgumentParser, algo: Algorithm, *, skip: Iterable[str] = ()) -> None:
    """``algo``'s settings as flags (its config's, with only the privacy settings it implements)."""
    add_setting_flags(parser, algo.settings(), skip=skip, own_data=algo.own_data, title=algo.name)


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, by name."""
    return {name: getattr(args, name) for name in sorted(getattr(args, GIVEN, ()))}


def read_hparams(path: str | None, known: Iterable[str] | None = None) -> dict[str, Any]:
    """The flat JSON object in ``path`` (``{}`` without one); keys not among ``known`` are a :class:`UsageError`."""
    if path is None:
        return {}
    try:
        values = json.loads(Path(path).expanduser().read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"--hparams: cannot read a JSON object from {path}: {err}") from None
    if not isinstance(values, dict):
        raise UsageError(f"--hparams: expected a JSON object in {path}, got {type(values).__name__}.")
    unknown = sorted(set(values) - set(known if known is not None else values))
    if unknown:
        raise UsageError(f"--hparams: unknown key(s) {unknown} in {path}; the settings of this algorithm are "
                         "its flags' names with '_'.")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
