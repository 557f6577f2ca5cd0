"""The privacy audit of a built TFF computation (before ``replace_secure_intrinsics_with_bodies``):
:func:`client_flows` follows every CLIENTS → SERVER value, marked by the graphs it passes (DP clip, noise,
public); :func:`violations` names the flows that break a claim of secure aggregation or DP."""

from __future__ import annotations

import dataclasses
import functools
import re

from tff_esn.privacy.coverage import CLIP_MARKERS, NOISE_OPS, PUBLIC, PUBLIC_PREFIX
from tff_esn.runtime import load_tff

CLIP, NOISE = "clip", "noise"
_PLUMBING = frozenset({"Placeholder", "Identity", "Const", "NoOp"})
Lineage = frozenset  # the marks a client value picked up on its way


@dataclasses.dataclass(frozen=True)
class Flow:
    """One CLIENTS → SERVER aggregation: ``intrinsic``, sent ``value_type``, client data ``lineages``, whether noised."""

    intrinsic: str
    value_type: str
    lineages: frozenset
    noised_at_server: bool

    @property
    def client_derived(self) -> bool:
        return bool(self.lineages)

    @property
    def secure(self) -> bool:
        return self.intrinsic.startswith("federated_secure")

    def public_names(self) -> set[str]:
        """Names of the public marks every lineage carries."""
        sets = [{m[len(PUBLIC_PREFIX):] for m in lineage if m.startswith(PUBLIC_PREFIX)} for lineage in self.lineages]
        return set.intersection(*sets) if sets else set()

    def dp_covered(self) -> bool:
        """Every lineage clipped, and noised on the clients or at the server."""
        return all(CLIP in lineage and (NOISE in lineage or self.noised_at_server) for lineage in self.lineages)

    def __str__(self) -> str:
        marks = sorted({m for lineage in self.lineages for m in lineage})
        return f"{self.intrinsic}({self.value_type}) marks={marks} noised_at_server={self.noised_at_server}"


@dataclasses.dataclass
class _Value:
    lineages: frozenset = frozenset()  # of Lineage; empty: no client data
    flows: frozenset = frozenset()  # ids of the flows a server value derives from

    def __or__(self, other: _Value) -> _Value:
        return _Value(self.lineages | other.lineages, self.flows | other.flows)


@functools.lru_cache(maxsize=4096)
def _graph_marks(proto_bytes: bytes) -> frozenset:
    """Marks of a serialized TFF TensorFlow computation's graph (module docstring)."""
    from tensorflow_federated.proto.v0 import computation_pb2
    from tensorflow_federated.python.tensorflow_libs import serialization_utils

    proto = computation_pb2.Computation.FromString(proto_bytes)
    if not proto.HasField("tensorflow"):
        return frozenset()
    graph = serialization_utils.unpack_graph_def(proto.tensorflow.graph_def)
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    marks = set()
    if {n.op for n in nodes} - _PLUMBING in ({"Less", "Cast"}, {"Greater", "Cast"}):
        marks.add(PUBLIC_PREFIX + "secure_clipped_count")  # TFF SecureSumFactory: is the value beyond the bound?
    for node in nodes:
        if any(marker in node.name for marker in CLIP_MARKERS):
            marks.add(CLIP)
        if node.op in NOISE_OPS:
            marks.add(NOISE)
        for segment in node.name.split("/"):
            if segment.startswith(PUBLIC_PREFIX):
                marks.add(re.sub(r"_\d+$", "", segment))
    return frozenset(marks)


def _function_marks(fn) -> frozenset:
    """Marks of every compiled computation inside ``fn`` (a compiled computation or a lambda)."""
    from tensorflow_federated.python.core.impl.compiler import building_blocks as bb

    if isinstance(fn, bb.CompiledComputation):
        return _graph_marks(fn.proto.SerializeToString(deterministic=True))
    marks = frozenset()
    for child in fn.children():
        marks |= _function_marks(child)
    return marks


def _placement(type_spec) -> set[str]:
    """The placements (``clients``/``server``) inside ``type_spec``."""
    tff = load_tff()

    found = set()

    def visit(t):
        if isinstance(t, tff.FederatedType):
            found.add(str(t.placement).lower())
        elif isinstance(t, tff.StructType):
            for _, element in tff.structure.iter_elements(t):
                visit(element)

    visit(type_spec)
    return found


class _Walker:
    def __init__(self, inputs_released: bool):
        self.flows: list[Flow] = []
        self.noised: set[int] = set()
        self.inputs_released = inputs_released

    def parameter(self, type_spec, seed_parameters: tuple[int, ...]) -> _Value | list[_Value]:
        """The parameter's value, per element when it is a struct (``seed_parameters``: no client data)."""
        tff = load_tff()

        def value(t) -> _Value:
            if "clients" not in _placement(t):
                return _Value()
            return _Value(frozenset({Lineage({CLIP, NOISE} if self.inputs_released else set())}))

        if not isinstance(type_spec, tff.StructType):
            return value(type_spec)
        return [_Value() if i in seed_parameters else value(t)
                for i, (_, t) in enumerate(tff.structure.iter_elements(type_spec))]

    def evaluate(self, comp, env: dict) -> _Value:
        from tensorflow_federated.python.core.impl.compiler import building_blocks as bb

        if isinstance(comp, bb.Reference):
            found = env.get(comp.name, _Value())
            return functools.reduce(_Value.__or__, found, _Value()) if isinstance(found, list) else found
        if isinstance(comp, bb.Selection):
            source = comp.source
            if isinstance(source, bb.Reference) and isinstance(env.get(source.name), list):
                return env[source.name][comp.as_index()]
            return self.evaluate(source, env)
        if isinstance(comp, bb.Struct):
            out = _Value()
            for child in comp.children():
                out = out | self.evaluate(child, env)
            return out
        if isinstance(comp, bb.Block):
            inner = dict(env)
            for name, value in comp.locals:
                inner[name] = self.evaluate(value, inner)
            return self.evaluate(comp.result, inner)
        if isinstance(comp, bb.Call):
            argument = _Value() if comp.argument is None else self.evaluate(comp.argument, env)
            if isinstance(comp.function, bb.Intrinsic):
                return self.intrinsic(comp, argument, env)
            return argument
        return _Value()

    def intrinsic(self, call, argument: _Value, env: dict) -> _Value:
        from tensorflow_federated.python.core.impl.compiler import building_blocks as bb

        uri = call.function.uri
        if uri.startswith(("federated_value", "federated_eval")):
            return _Value()
        arg = call.argument
        if uri in ("federated_map", "federated_map_all_equal", "federated_apply"):
            fn, value = (arg.children() if isinstance(arg, bb.Struct) else (None, arg))
            value = self.evaluate(value, env)
            marks = _function_marks(fn) if fn is not None else frozenset()
            if NOISE in marks:
                self.noised |= set(value.flows)
            return _Value(frozenset(lineage | marks for lineage in value.lineages), value.flows)
        placements = _placement(arg.type_signature) if arg is not None else set()
        if "clients" in placements and _placement(call.type_signature) == {"server"}:
            if uri == "federated_aggregate":
                argument = self.evaluate(next(iter(arg.children())), env)
            self.flows.append(Flow(uri, str(arg.type_signature), argument.lineages, False))
            return _Value(flows=frozenset({len(self.flows) - 1}))
        return argument


def client_flows(computation, *, inputs_released: bool = False, seed_parameters: tuple[int, ...] = ()) -> list[Flow]:
    """Every CLIENTS → SERVER aggregation of ``computation``; ``inputs_released``: inputs already DP;
    ``seed_parameters``: the noise-seed parameters."""
    from tensorflow_federated.python.core.impl.compiler import building_blocks as bb
    from tensorflow_federated.python.core.impl.compiler import transformations

    lam = transformations.to_call_dominant(computation.to_building_block())
    if not isinstance(lam, bb.Lambda):
        raise TypeError(f"audit: expected a federated lambda, got {type(lam).__name__}.")
    walker = _Walker(inputs_released)
    env = {}
    if lam.parameter_name is not None:
        env[lam.parameter_name] = walker.parameter(lam.parameter_type, seed_parameters)
    walker.evaluate(lam.result, env)
    return [dataclasses.replace(f, noised_at_server=i in walker.noised) for i, f in enumerate(walker.flows)]


def violations(flows: list[Flow], *, secure: bool, dp: bool, public: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Flows breaking a secure-aggregation and/or DP claim, one line each (``public`` flows: exempt from DP only)."""
    unknown = set(public) - set(PUBLIC)
    if unknown:
        raise ValueError(f"public values {sorted(unknown)} are not in the allow-list {sorted(PUBLIC)}.")
    out = []
    for flow in flows:
        if not flow.client_derived:
            continue
        if secure and not flow.secure:
            out.append(f"client-derived value summed in the clear under secure aggregation: {flow}")
        if dp and not flow.dp_covered() and not (flow.public_names() & set(public)):
            out.append(f"client-derived value bypasses the DP mechanism: {flow}")
    return out
