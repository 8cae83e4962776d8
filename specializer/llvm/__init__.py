"""The base layer: everything that talks to LLVM (llvmlite) or reads and writes LLVM IR text.

module: parse, verify, link (each build in LLVM contexts of its own); emit: Thumb objects and
assembly; transforms: the LLVM pass pipelines a build runs; options: LLVM's cl::opts, set for
one piece of work and restored; isolate: work that may abort LLVM, in a forked child; precheck:
constructs that would kill LLVM's backend, named before it sees them; read: a .ll file's bytes
to text; irtext: every operation on IR as text (names and quoting, define/declare and call lines,
argument lists, globals, attributes, metadata, sections), the one place that spells LLVM's
identifier syntax; triples: target
triples read as LLVM reads them. Nothing here imports another stage of the package.
"""
