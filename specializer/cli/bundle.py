"""`specialize bundle`: one variant of a captured model packaged for a firmware."""

from __future__ import annotations

import argparse
from pathlib import Path

from specializer.cli.args import byte_count, calls, growth, output_dir, progress_lines, unroll_threshold
from specializer.errors import UserError


BUNDLE_EPILOG = """\
DIR receives:
  <fn>.o, lib<fn>.a  the variant's code, the kernel code it uses, weights and buffers; exports only
                     the entry and the I/O buffers; libc/libm symbols stay undefined (newlib)
  <fn>.h             entry prototype, I/O buffers with C types, shapes, dtypes; flash, RAM, stack
                     and arena bytes; the undefined symbols; section names for placing weights
  main.c             fills the inputs with the captured example, calls the entry, prints the outputs
  qemu/              startup.S and link.ld to try it on QEMU's mps2-an386 with newlib's semihosting

try it:
  arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2 --specs=rdimon.specs \\
    -nostartfiles -Wl,--gc-sections -Wl,--no-enum-size-warning -T DIR/qemu/link.ld -IDIR \\
    DIR/qemu/startup.S DIR/main.c DIR/lib<fn>.a -lm -o model.elf
  qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native -kernel model.elf
"""


def main(argv: list[str]) -> int:
    from specializer.optimize.variants import DEFAULT_FLASH_BUDGET, DEFAULT_MAX_GROWTH, VARIANTS, Options

    p = argparse.ArgumentParser(prog="specialize bundle", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=BUNDLE_EPILOG,
                                description="Build one variant of a captured model and write it as a bundle a "
                                            "firmware links: object, static library, C header, example main.c.")
    p.add_argument("model", metavar="model.ll", help="a captured model.ll (model.json next to it)")
    p.add_argument("-o", "--output", required=True, type=output_dir, metavar="DIR", help="the bundle's directory")
    p.add_argument("--variant", default="all-args", choices=VARIANTS, help="which build (default all-args)")
    p.add_argument("--max-growth", type=growth, default=DEFAULT_MAX_GROWTH, metavar="X",
                   help=f"specializing variants: clone budget per callee (default {DEFAULT_MAX_GROWTH:g})")
    p.add_argument("--flash-budget", type=byte_count, default=DEFAULT_FLASH_BUDGET, metavar="BYTES",
                   help=f"specializing variants: code + data budget (default {DEFAULT_FLASH_BUDGET})")
    p.add_argument("--unroll-threshold", type=unroll_threshold, default="llvm", metavar="N",
                   help="specializing variants: LLVM loop-unroll threshold, N or 'llvm' (default: LLVM's own); "
                        "a comparison's table says which it measured faster")
    p.add_argument("--shape-only", type=calls, default=frozenset(), metavar="N+N...",
                   help="all-args: these calls specialized by dims' rule (a comparison's table lists the "
                        "calls it measured faster that way)")
    p.add_argument("--no-run", action="store_true",
                   help="do not run the bundle on QEMU (no stack measurement, no check against JAX)")
    p.add_argument("--timeout", type=float, default=120, help="seconds before the QEMU run counts as a hang")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(argv)
    from specializer import inputs
    from specializer.driver.bundle import bundle

    path = Path(a.model)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    model = inputs.load(path)
    progress = None if a.quiet else progress_lines(f"specialize: {model.name}")
    threshold, candidates = a.unroll_threshold
    if candidates:
        raise UserError("bundle builds without measuring first: give --unroll-threshold N or llvm, not auto")
    options = Options.of(max_growth=a.max_growth, flash_budget=a.flash_budget, unroll_threshold=threshold,
                         shape_only=a.shape_only)
    b = bundle(model, Path(a.output), a.variant, options,
               run=not a.no_run, timeout=a.timeout, progress=progress)
    fp = b.footprint
    ram = f"RAM {fp.static_ram + b.row.stack} B (stack {b.row.stack} B)" if b.row else \
        f"static RAM {fp.static_ram} B (stack not measured)"
    print(f"wrote {b.object}, {b.library}, {b.header}, {b.main}, {b.dir / 'qemu'}/")
    print(f"{model.name} ({b.variant}): flash {fp.flash} B, {ram}, arena {b.arena} B; "
          f"undefined: {', '.join(b.undefined) or 'none'}")
    return 0
