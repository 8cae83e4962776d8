"""What the package ships besides its modules (no imports: setup.py reads this file too).

A checkout keeps these at its top level, the layout the project fixed; a wheel carries them
inside the package, where setup.py copies them."""

SHIPPED = ("libkernels", "cmsis_nn_shim", "examples", "scripts/fetch_qemu_plugin_header.sh")
