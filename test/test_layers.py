"""The package's layers (its docstring, lowest first): no module imports from a higher layer.

Every module's imports are read from its source (``ast``: module level, inside functions and classes, relative
ones resolved), so an import placed inside a function to dodge a cycle is seen too."""
import ast
import os
import re

import jethexa_dynamics

ROOT = os.path.dirname(jethexa_dynamics.__file__)

def layers():
    """[{names}] lowest first, from the package docstring's indented block after 'Layers, lowest first'."""
    doc = jethexa_dynamics.__doc__
    block = doc.split("Layers, lowest first", 1)[1].split("\n\n", 2)[1]
    return [set(part.split()) for part in " ".join(block.split()).split("<")]


def layer_of(module, order):
    """Index of ``module``'s layer: its subpackage or top-level module; the package itself is the base."""
    parts = module.split(".")
    if len(parts) == 1:
        return 0
    for i, names in enumerate(order):
        if parts[1] in names:
            return i
    raise AssertionError("%s is in no layer of the package docstring: add it there" % module)


def imports():
    """[(importing module, imported module)] within the package, every import statement of every module."""
    out = []
    for dirpath, _, files in os.walk(ROOT):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].split(os.sep)
            is_pkg = rel[-1] == "__init__"
            module = ".".join(rel[:-1] if is_pkg else rel)
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level:
                    pkg = base[:len(base) - node.level + 1]
                    targets = ([".".join(pkg + [node.module])] if node.module
                               else [".".join(pkg + [a.name]) for a in node.names])
                elif isinstance(node, ast.ImportFrom):
                    targets = [node.module]
                else:
                    continue
                out += [(module, t) for t in targets if t == "jethexa_dynamics" or t.startswith("jethexa_dynamics.")]
    return out


def test_every_subpackage_and_top_level_module_has_a_layer():
    order = layers()
    assert len(order) >= 10 and {"model", "nodes", "demo"} <= set().union(*order)
    for entry in sorted(os.listdir(ROOT)):
        name = entry[:-3] if entry.endswith(".py") else entry
        if entry.endswith(".py") and name != "__init__" or os.path.isfile(os.path.join(ROOT, entry, "__init__.py")):
            layer_of("jethexa_dynamics." + name, order)


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    order = layers()
    found = imports()
    assert len(found) > 100 and any(m.startswith("jethexa_dynamics.nodes.") for m, _ in found)
    upward = sorted((m, t) for m, t in found if layer_of(t, order) > layer_of(m, order))
    assert upward == [], "imports from a lower layer to a higher one: %s" % upward


def test_the_check_sees_imports_inside_functions_and_relative_ones():
    """The reader itself: a function-level import and a relative import are found and resolved."""
    found = set(imports())
    assert ("jethexa_dynamics.model.morphology", "jethexa_dynamics.model.scenarios") in found   # inside a method
    assert ("jethexa_dynamics.model.robot", "jethexa_dynamics.model.morphology") in found        # relative
    assert re.match(r"^\s*cli_args", jethexa_dynamics.__doc__.split("Layers, lowest first", 1)[1].split("\n\n")[1])
