"""Run an all-args int8 kernel (libkernels/<kernel>.c) on QEMU's Cortex-M4 over several cases in
one firmware: each case's input, weights and records as C arrays, one call, its output printed;
returns each case's output (test_conv_s8.py, test_dwconv_s8.py)."""

import numpy as np
from test_cmsis_nn import DATA, KERNELS, build_firmware, c_array, run_firmware, wrap32


def run_kernel(tmp_path, kernel: str, scratch: str, cases: list[tuple[np.ndarray, object, int, str]]):
    """cases: (input, kernel Args with weights/rq/ints(), output size, scratch argument); scratch:
    the C definition of the scratch the calls share. -> [output values per case]."""
    defs, stmts = [], []
    for i, (x, a, n, scratch_arg) in enumerate(cases):
        # aligned as relayout's constant arrays are (align 4): the kernels read words of them
        wtype = ("const int8_t" if a.weights.dtype == np.int8 else "const int16_t") + " __attribute__((aligned(4)))"
        defs += [c_array(f"x{i}", x, "const int8_t"), c_array(f"w{i}", a.weights, wtype),
                 c_array(f"q{i}", np.array(a.rq), "const int32_t"), f"static int8_t o{i}[{n}];\n"]
        arrays = []  # the kernel's array arguments after the scratch (libjit_conv_s8: index, fill)
        for what, arr in a.pointer_arrays():
            if arr is None:
                arrays.append("0")
            else:
                defs.append(c_array(f"{what}{i}", arr, "const int16_t" if arr.dtype == np.int16 else "const int8_t"))
                arrays.append(f"{what}{i}")
        stmts.append(f"{kernel}(o{i}, x{i}, w{i}, q{i}, {', '.join([scratch_arg, *arrays])}, "
                     f"{', '.join(map(str, a.ints()))});\n"
                     f'  io_str("case{i}");\n  for (int i = 0; i < {n}; i++) io_hex32((uint32_t)(int32_t)o{i}[i]);\n'
                     '  io_str("\\n");')
    main = tmp_path / "main.c"
    main.write_text('#include <stdint.h>\n#include "libjit_s8.h"\n#include "io.h"\n\n' + scratch + "".join(defs) +
                    "\nint main(void)\n{\n  " + "\n  ".join(stmts) + '\n  io_str("end\\n");\n  io_flush();\n'
                    "  return 0;\n}\n")
    source = KERNELS / (kernel.removeprefix("libjit_") + ".c")
    res = run_firmware(build_firmware(tmp_path, kernel, [main, DATA / "io.c", source]))
    return [wrap32(res[f"case{i}"]) for i in range(len(cases))]
