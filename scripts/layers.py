#!/usr/bin/env python3
"""Checks dimsum's one-way layering: a module of src/ imports only from its
own layer or from layers below it (the order is in src/lib.rs), and no two
top-level modules import each other. Prints every violation; exit 1 if any."""
import re, sys, pathlib
ORDER = ["error", "io", "model", "schedule", "optimize", "interop", "study", "pipeline", "report"]
RANK = {"error": 0, "io": 0, "model": 1, "schedule": 2, "optimize": 3, "interop": 4,
        "study": 5, "pipeline": 6, "report": 7}
root = pathlib.Path(__file__).resolve().parent.parent / "src"
bad = 0
edges = set()
for f in sorted(root.rglob("*.rs")):
    rel = f.relative_to(root)
    top = rel.parts[0].removesuffix(".rs")
    if top in ("lib", "main", "cli"):
        continue
    text = f.read_text()
    # Test modules may reach anywhere.
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    for line in text.splitlines():
        if line.lstrip().startswith("//"):
            continue
        for m in re.finditer(r"\bcrate::([a-z_]+)", line):
            dep = m.group(1)
            if dep not in RANK or dep == top:
                continue
            edges.add((top, dep))
            if RANK[dep] > RANK[top]:
                print(f"src/{rel}: {top} imports {dep} (a higher layer): {line.strip()}")
                bad += 1
for a, b in sorted(edges):
    if (b, a) in edges and a < b:
        print(f"circle: {a} <-> {b}")
        bad += 1
print(f"layers: {len(edges)} module edges, {bad} violations")
sys.exit(1 if bad else 0)
