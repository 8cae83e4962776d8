"""llvm/packweights.py: float weights as byte strings through LLVM's parse and print, given back
exactly; what LLVM folds from them is what it folds from the typed form."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from specializer.llvm import module, packweights, transforms

TRIPLE = 'target datalayout = "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64"\n' \
         'target triple = "thumbv7em-none-unknown-eabihf"\n'


def _float_list(values) -> str:
    return ", ".join("float 0x%016X" % struct.unpack("<Q", struct.pack("<d", float(np.float32(v))))[0]
                     for v in values)


def _module(values, name="w", extra="") -> str:
    n = len(values)
    return (TRIPLE + f"@{name} = internal constant [{n} x float] [{_float_list(values)}], align 4\n" + extra
            + f"define float @get(i32 %i) {{\n  %p = getelementptr inbounds [{n} x float], ptr @{name}, i32 0, i32 %i\n"
            f"  %v = load float, ptr %p\n  ret float %v\n}}\n"
            f"define float @third() {{\n  %v = call float @get(i32 3)\n  ret float %v\n}}\n")


def _values(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    v = rng.normal(size=n).astype(np.float32)
    # bytes LLVM prints specially: a backslash (0x5C), a quote (0x22), printable letters
    v[0] = np.frombuffer(b"\\\"AZ", np.float32)[0]
    v[1] = np.frombuffer(b"\\\\\\\\", np.float32)[0]
    # values LLVM writes in decimal or hex by its own rule (six significant digits exact or not)
    v[2:14] = [1.0, -0.0, 0.0, 0.0009765625, 1e10, 1234567.0, 123456.0, -46.84375, 2.0 ** -149,
               np.inf, 3.4028235e38, 0.1]
    return v


def test_packed_weight_round_trips_through_llvm_exactly():
    text = _module(_values(100))
    typed = str(module.parse(text, "m.ll"))
    packed = packweights.pack(text, {"w"})
    assert set(packed.typed) == {"w"}
    assert "@w = internal constant [400 x i8] c\"" in packed.text
    printed = str(module.parse(packed.text, "m.ll"))
    assert "[400 x i8] c\"" in printed
    assert packweights.unpack(printed, packed.typed) == typed


def test_only_named_large_plain_float_arrays_are_packed():
    small = _module(_values(63))  # 252 bytes < MIN_BYTES
    assert packweights.pack(small, {"w"}).typed == {}
    other = _module(_values(100), name="v")
    assert packweights.pack(other, {"w"}).typed == {}
    zeros = TRIPLE + "@w = constant [100 x float] zeroinitializer\n"
    assert packweights.pack(zeros, {"w"}).text == zeros
    nested = TRIPLE + ("@w = constant [2 x [64 x float]] [[64 x float] [" + _float_list(_values(64))
                       + "], [64 x float] zeroinitializer]\n")
    assert packweights.pack(nested, {"w"}).typed == {}
    full = TRIPLE + ("@w = constant [2 x [64 x float]] [[64 x float] [" + _float_list(_values(64))
                     + "], [64 x float] [" + _float_list(-_values(64)) + "]]\n")
    p = packweights.pack(full, {"w"})
    assert "[512 x i8] c\"" in p.text
    assert packweights.unpack(str(module.parse(p.text, "m.ll")), p.typed) == str(module.parse(full, "m.ll"))


def test_a_load_folds_to_the_same_constant_from_the_bytes():
    text = _module(_values(100))
    outs = []
    for t in (text, packweights.pack(text, {"w"}).text):
        mod = module.parse(t, "m.ll")
        transforms.optimize(mod)
        outs.append(str(mod.get_function("third")))
    assert "ret float" in outs[0] and "load" not in outs[0]
    assert outs[0] == outs[1]


def test_changed_bytes_are_an_error_not_a_silent_restore():
    packed = packweights.pack(_module(_values(100)), {"w"})
    printed = str(module.parse(packed.text, "p.ll"))
    at = printed.index('c"') + 2
    broken = printed[:at] + "\\00" + printed[at + 3:]
    if broken == printed:
        broken = printed[:at] + "\\01" + printed[at + 3:]
    with pytest.raises(ValueError, match="changed its bytes"):
        packweights.unpack(broken, packed.typed)


def test_floats_are_written_as_llvms_printer_writes_them():
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.normal(size=1000), np.arange(-500, 500) / 64, rng.integers(-10**7, 10**7, 500),
        rng.integers(-999999, 999999, 500) * 1e-3, 10.0 ** np.arange(-45, 39),
        rng.integers(1, 99, 500) * 10.0 ** rng.integers(-40, 36, 500),
        [0.0, -0.0, 2.0 ** -149, 2.0 ** -126, 3.4028235e38, np.inf, -np.inf, np.nan, 16777217.0, 9999995.0]
    ]).astype(np.float32)
    text = f"@w = constant [{len(values)} x float] [{_float_list(values)}]\n"
    printed = str(module.parse(text, "m.ll"))
    llvm_tokens = re.findall(r"float (\S+?)[,\]]", printed[printed.index("@w"):])
    ours = packweights._float_texts(values)
    assert sum(not t.startswith("0x") for t in llvm_tokens) > 500  # both forms are exercised
    assert ours == llvm_tokens


def test_hand_written_floats_are_read_as_llvm_reads_them():
    got = packweights.float_bytes("[float 0.0, float 2., float -1.5e3, float 0x3FF0000000000000, float 1.5E+1]", 5)
    assert np.frombuffer(got, "<f4").tolist() == [0.0, 2.0, -1500.0, 1.0, 15.0]
    assert packweights.float_bytes("[float 0.1]", 1) is None  # no float32 value: LLVM refuses it too
    assert packweights.float_bytes("[float 1.0, float 2.0]", 3) is None


def test_all_zero_and_nan_weights_stay_typed():
    zeros = TRIPLE + "@w = constant [100 x float] [" + ", ".join(["float 0.0"] * 100) + "]\n"
    assert packweights.pack(zeros, {"w"}).typed == {}  # LLVM would print the string as zeroinitializer
    v = _values(100)
    v[7] = np.nan
    assert packweights.pack(_module(v), {"w"}).typed == {}  # NumPy would quiet a signaling NaN


def test_emitted_assembly_shows_the_weights_typed(captured, tmp_path):
    """`--emit asm` is read by people: the weights as llc prints them from optimized.ll (.long),
    not the byte strings the build carries them as."""
    import subprocess
    import sys

    c = captured("mlp256")
    out = tmp_path / "m.s"
    r = subprocess.run([sys.executable, "-m", "specializer.cli", "--all-args", str(c.model_ll), "--emit", "asm",
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    asm = out.read_text()
    weights = [line for line in asm.splitlines() if line.strip().startswith(".ascii")]
    assert ".long" in asm and not any(len(line) > 200 for line in weights)
