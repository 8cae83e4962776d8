"""model.json: what the entry function reads and writes, and what JAX says it should produce."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from specializer.errors import UserError

SCHEMA = 1
# the version key an imported model's oracle records -> whose outputs model.json then holds
REFERENCES = {"tflite_micro": "TFLite Micro", "onnx": "onnx.reference"}


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name: float32, int32, int8, bool, ...
    symbol: str  # global the caller fills (inputs) or reads (outputs), or the baked weight
    offset: int = 0  # byte offset inside `symbol`
    data: tuple = ()  # flattened example input / JAX reference output (empty for weights)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np_dtype(self.dtype).itemsize

    def array(self) -> np.ndarray:
        dt = np_dtype(self.dtype)
        if dt.kind == "c":  # stored as (re, im) pairs
            return np.asarray(self.data, dtype=f"f{dt.itemsize // 2}").view(dt).reshape(self.shape)
        return np.asarray(self.data, dtype=dt).reshape(self.shape)


@dataclass(frozen=True)
class Vector:
    """One more input and its reference outputs (flat data per tensor, in the manifest's order):
    every run checks them too, on the same build; the manifest's own inputs are the measured ones."""
    inputs: tuple[tuple, ...]
    outputs: tuple[tuple, ...]


@dataclass(frozen=True)
class Manifest:
    function: str
    entry: str  # C ABI: void entry(void); buffers are the globals named below
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    weights: tuple[Tensor, ...]
    versions: dict = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-6
    schema: int = SCHEMA
    vectors: tuple[Vector, ...] = ()
    rtol_basis: str = ""  # what a tolerance other than the default rests on (tolerance.py)

    def dumps(self) -> str:
        raw = asdict(self)
        if not self.vectors:  # a model.json without them reads as before, byte for byte
            del raw["vectors"]
        if not self.rtol_basis:
            del raw["rtol_basis"]
        return json.dumps(raw, indent=1, sort_keys=True) + "\n"

    @property
    def reference(self) -> str:
        """Whose outputs the reference outputs are: an imported model's format's interpreter."""
        if "reference" in self.versions:  # an imported model that keeps JAX's outputs (ONNX QDQ)
            return "JAX"
        return next((who for key, who in REFERENCES.items() if key in self.versions), "JAX")

    @property
    def checked_inputs(self) -> int:
        """How many inputs every run checks: the measured one and the vectors."""
        return 1 + len(self.vectors)

    def at(self, k: int) -> "Manifest":
        """This manifest with vector k's inputs and reference outputs in place of its own."""
        v = self.vectors[k]
        return replace(self, inputs=tuple(replace(t, data=d) for t, d in zip(self.inputs, v.inputs)),
                       outputs=tuple(replace(t, data=d) for t, d in zip(self.outputs, v.outputs)), vectors=())

    @staticmethod
    def load(path: Path) -> "Manifest":
        try:
            raw = json.loads(Path(path).read_text())
            tensors = lambda key: tuple(  # noqa: E731
                Tensor(**{**t, "shape": tuple(t["shape"]), "data": tuple(t["data"])}) for t in raw[key])
            return Manifest(function=raw["function"], entry=raw["entry"], inputs=tensors("inputs"),
                            outputs=tensors("outputs"), weights=tensors("weights"),
                            versions=raw.get("versions", {}), rtol=raw.get("rtol", 1e-5),
                            atol=raw.get("atol", 1e-6), schema=raw.get("schema", SCHEMA),
                            vectors=tuple(_vector(v, raw) for v in raw.get("vectors", ())),
                            rtol_basis=raw.get("rtol_basis", ""))
        except FileNotFoundError:
            raise UserError(f"{path}: manifest not found (capture writes it next to model.ll)") from None
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"{path}: not a specializer manifest ({e})") from None


def _vector(v: dict, raw: dict) -> Vector:
    inputs, outputs = tuple(tuple(d) for d in v["inputs"]), tuple(tuple(d) for d in v["outputs"])
    if len(inputs) != len(raw["inputs"]) or len(outputs) != len(raw["outputs"]):
        raise ValueError(f"a vector has {len(inputs)} inputs and {len(outputs)} outputs, the model "
                         f"{len(raw['inputs'])} and {len(raw['outputs'])}")
    for d, t in zip(inputs + outputs, raw["inputs"] + raw["outputs"]):
        if len(d) != len(t["data"]):
            raise ValueError(f"a vector's '{t['name']}' has {len(d)} values, not {len(t['data'])}")
    return Vector(inputs, outputs)


def np_dtype(name: str) -> np.dtype:
    """A dtype by name, JAX's own (bfloat16, float8_*) included: those live in ml_dtypes."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        if not hasattr(ml_dtypes, name):
            raise UserError(f"unknown element type '{name}'") from None
        return np.dtype(getattr(ml_dtypes, name))


def flat(values: np.ndarray) -> tuple:
    """Values as a flat tuple of Python scalars (exact for float32, stable in JSON): bfloat16 and
    other narrow floats as the float32 they widen to exactly, complex as (re, im) pairs."""
    a = np.asarray(values)
    if a.dtype == np.bool_:
        return tuple(int(v) for v in a.reshape(-1))
    if a.dtype.kind == "c":
        return tuple(a.reshape(-1).view(f"f{a.dtype.itemsize // 2}").tolist())
    if a.dtype.kind == "V" or a.dtype.type.__module__.startswith("ml_dtypes"):
        return tuple(a.reshape(-1).astype(np.float32).tolist())
    return tuple(a.reshape(-1).tolist())
