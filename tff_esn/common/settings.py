"""The flat settings of a config dataclass: names, defaults, types, choices and help.

A nested config's leaves get flat names (``reservoir.units`` is ``units``; ``metadata`` ``prefix`` and
``flag`` rename); help is ``metadata["help"]`` or the ``Attributes:`` entry of the declaring class's
docstring, plus ``choices``, ``type`` and ``metavar``. No numpy, no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Setting:
    """A config class's flat setting: flag ``name``, dataclass ``field``, ``owner``, ``default`` and ``group``."""

    name: str
    field: dataclasses.Field
    owner: type
    default: Any
    group: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def help(self) -> str:
        """``metadata["help"]`` or the first sentence of the docstring's attribute text (``""``: neither)."""
        text = self.field.metadata.get("help") or attribute_help(self.owner).get(self.field.name, "")
        return re.split(r"(?<=\.) (?=[A-Z])", text, maxsplit=1)[0]

    @property
    def choices(self) -> tuple | None:
        choices = self.field.metadata.get("choices")
        return tuple(choices) if choices is not None else None

    @property
    def annotation(self) -> Any:
        """The field's resolved type (``int``, ``float | None``, ``tuple[float, float]``, …)."""
        return _hints(self.owner)[self.field.name]

    @property
    def optional(self) -> bool:
        """Whether ``None`` is a value of this setting (written ``none`` on the command line)."""
        return type(None) in typing.get_args(self.annotation)

    @property
    def kinds(self) -> tuple:
        """The types a value can have besides ``None`` (``(float, str)`` for ``float | str``)."""
        annotation = self.annotation
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
            return tuple(a for a in typing.get_args(annotation) if a is not type(None))
        return (annotation,)

    def parse(self, text: str) -> Any:
        """``text`` parsed as the first non-string type that parses, else a choice (``ValueError``: none)."""
        if self.optional and text.lower() == "none":
            return None
        custom = self.field.metadata.get("type")
        if custom is not None:
            return custom(text)
        for kind in (k for k in self.kinds if k is not str):
            try:
                return _parse(kind, text)
            except ValueError:
                if str not in self.kinds:
                    raise
        if str in self.kinds and (self.choices is None or text in self.choices):
            return text
        raise ValueError(f"expected a {' or '.join(k.__name__ for k in self.kinds if k is not str)} or one of "
                         f"{', '.join(map(str, self.choices or ()))}, got {text!r}")


def _parse(kind: Any, text: str) -> Any:
    if kind in (int, float, str):
        return kind(text)
    if typing.get_origin(kind) is tuple:
        args = typing.get_args(kind)
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(args[0](p) for p in parts)
        if len(parts) != len(args):
            raise ValueError(f"expected {len(args)} comma-separated values, got {text!r}")
        return tuple(a(p) for a, p in zip(args, parts))
    raise ValueError(f"no text form for {kind!r}; declare metadata['type']")


@functools.cache
def _hints(owner: type) -> dict[str, Any]:
    return typing.get_type_hints(owner)


_ATTRIBUTE = re.compile(r"^(\s+)([A-Za-z_][A-Za-z0-9_]*): (.*)$")
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


@functools.cache
def attribute_help(owner: type) -> dict[str, str]:
    """``{field: text}`` from the ``Attributes:`` sections of ``owner`` and its bases (nearest wins), markup dropped."""
    out: dict[str, str] = {}
    for cls in reversed(owner.__mro__):
        doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
        if "Attributes:" not in doc:
            continue
        entries: dict[str, list[str]] = {}
        indent, current = None, None
        for line in doc.split("Attributes:", 1)[1].splitlines()[1:]:
            if not line.strip():
                continue
            match = _ATTRIBUTE.match(line)
            width = len(line) - len(line.lstrip())
            if match and (indent is None or width == indent):
                indent, current = width, match.group(2)
                entries[current] = [match.group(3).strip()]
            elif current is not None and indent is not None and width > indent:
                entries[current].append(line.strip())
            else:
                break
        out.update({k: _ROLE.sub(r"\1", " ".join(v)).replace("``", "") for k, v in entries.items()})
    return out


def _nested(field: dataclasses.Field) -> Any:
    """The default of a field holding a config dataclass (e.g. ``reservoir``), else ``None``."""
    default = field.default
    return default if dataclasses.is_dataclass(default) and not isinstance(default, type) else None


def _name(field: dataclasses.Field) -> str:
    """A field's setting name: ``metadata["flag"]`` (e.g. ``client_lr`` for ``learning_rate``) or its name."""
    return field.metadata.get("flag", field.name)


def settings(config: type, prefix: str = "", base: Any = None, group: str = "") -> dict[str, Setting]:
    """Every flat setting of ``config`` by name, in declaration order, with its default inside ``config``."""
    out: dict[str, Setting] = {}
    for field in dataclasses.fields(config):
        inner = getattr(base, field.name) if base is not None else _nested(field)
        if dataclasses.is_dataclass(inner) and not isinstance(inner, type):
            out.update(settings(type(inner), prefix + field.metadata.get("prefix", ""), inner, field.name))
        else:
            default = inner if base is not None else field.default
            if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            out[prefix + _name(field)] = Setting(prefix + _name(field), field, config, default, group)
    return out


def pick_settings(all_settings: Mapping[str, Setting], names: Iterable[str], **renamed: str) -> dict[str, Setting]:
    """The settings ``names`` of ``all_settings``, plus ``renamed`` ones (new name → setting name)."""
    picked = {name: all_settings[name] for name in names}
    picked.update({new: dataclasses.replace(all_settings[name], name=new) for new, name in renamed.items()})
    return picked


def config_fields(config: type, prefix: str = "") -> dict[str, dataclasses.Field]:
    """Every flat setting of a config class by name (:func:`settings`), as its dataclass field."""
    return {name: s.field for name, s in settings(config, prefix).items()}


def config_from_flags(config: type, flags: Mapping[str, Any], *, strict: bool = True, prefix: str = "",
                      base: Any = None) -> Any:
    """``config`` built from flat ``flags`` (nested configs too); unknown keys are an error unless ``strict=False``."""
    if strict:
        unknown = sorted(set(flags) - set(config_fields(config, prefix)))
        if unknown:
            raise ValueError(f"{config.__name__}: unknown setting(s) {unknown}; known: "
                             f"{', '.join(sorted(config_fields(config, prefix)))}.")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        inner = _nested(field) if base is None else getattr(base, field.name)
        if dataclasses.is_dataclass(inner) and not isinstance(inner, type):
            values[field.name] = config_from_flags(type(inner), flags, strict=False, base=inner,
                                                   prefix=prefix + field.metadata.get("prefix", ""))
        elif prefix + _name(field) in flags:
            values[field.name] = flags[prefix + _name(field)]
    return config(**values) if base is None else dataclasses.replace(base, **values)


def flat_config(config: Any, prefix: str = "") -> dict[str, Any]:
    """``dataclasses.asdict(config)`` with nested configs lifted to the top (``metrics.json``'s ``config`` keys)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            out.update(flat_config(value, prefix + field.metadata.get("prefix", "")))
        else:
            out[prefix + _name(field)] = list(value) if isinstance(value, tuple) else value
    return dict(sorted(out.items()))

