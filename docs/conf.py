"""Sphinx configuration of the package's docs (Markdown pages read by MyST; API pages from the docstrings).

Built two ways, the same pages either way (docs/development.md, "Building the docs"):

- ``sphinx-build -W -b html docs <out>``: what CI runs (``test/test_docs.py``);
- ``rosdoc2 build --package-path .``: the ROS index's builder. ``rosdoc2.yaml`` points it at this directory; it
  copies this directory into a wrapping project of its own, adds a generated ``index.rst`` and ``sphinx-apidoc``
  pages, and runs this file from its own ``conf.py``. Those generated files are excluded below, so the site is
  this project (its ``index.md`` the root page, its API pages under ``api/``) and nothing is described twice.

A link from a page to a repository file outside ``docs/`` (``../BENCHMARKS.md``, ``../benchmarks/results/*.md``,
a test) cannot be a Sphinx document: the built site carries a copy of that file (as it does for a linked ``.py``
file) and the link points there (``RepositoryLinks`` below). A link to a file that does not exist stays a missing
reference: a warning, an error under ``-W``.
"""
import os
import re
import sys

from sphinx.transforms import SphinxTransform

DOCS = os.path.dirname(os.path.abspath(__file__))


def _repository_root():
    """The repository (package.xml beside jethexa_dynamics/): this directory's parent; under rosdoc2, which runs a
    copy of this directory elsewhere, the current directory or one above it, else where the package imports from."""
    import importlib.util

    spec = importlib.util.find_spec("jethexa_dynamics")
    starts = [os.path.dirname(DOCS), os.getcwd()]
    if spec is not None and spec.origin:
        starts.append(os.path.dirname(os.path.dirname(spec.origin)))
    for start in starts:
        d = os.path.abspath(start)
        while True:
            if os.path.isfile(os.path.join(d, "package.xml")) and os.path.isdir(os.path.join(d, "jethexa_dynamics")):
                return d
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return os.path.dirname(DOCS)


ROOT = _repository_root()
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

project = "jethexa_dynamics"
author = "jethexa_dynamics developers"
copyright = "jethexa_dynamics developers, Apache-2.0"
release = version = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
]
try:                                  # the node graphs (requirements-dev.txt); without it they show as their text
    import sphinxcontrib.mermaid  # noqa: F401

    extensions.append("sphinxcontrib.mermaid")
    HAVE_MERMAID = True
except ImportError:
    HAVE_MERMAID = False
source_suffix = {".md": "markdown"}
root_doc = "index"
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
myst_fence_as_directive = ["mermaid"]

#: what rosdoc2 generates beside this project when it wraps it (its own index, the package pages of its
#: standard documents and sphinx-apidoc's module pages): not this site's pages
ROSDOC2_GENERATED = ["index.rst", "modules.rst", "jethexa_dynamics.rst", "jethexa_dynamics.*.rst",
                     "__readme_include.rst", "standards.rst", "standard_docs", "user_docs", "user_docs.rst",
                     "sphinx_output", "generated"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"] + ROSDOC2_GENERATED

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # the signatures stay as written; the docstrings say what the types mean
# the node modules import rclpy and the ROS message packages: documented on the node reference pages instead of
# here, so the API pages build where ROS is not installed (the pure-Python core imports without them)
autodoc_mock_imports = ["rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "nav_msgs",
                        "diagnostic_msgs", "trajectory_msgs"]
html_theme = "sphinx_rtd_theme"      # rosdoc2's theme
html_title = "jethexa_dynamics"
# A heading one level deeper than the one before it renders as it should; the pages moved from the README keep
# their levels. Every other warning is an error under -W.
suppress_warnings = ["myst.header"]


class RepositoryLinks(SphinxTransform):
    """A Markdown link to a ``.md`` file of the repository outside ``docs/`` (``../BENCHMARKS.md``): MyST takes it
    for a document of this project and finds none. It becomes a download link to that file (the site carries a
    copy, as it does for a linked ``.py`` or ``.yaml`` file). A link to a file that does not exist is left as it
    is: MyST's warning names the page, the line and the target."""

    default_priority = 500

    def apply(self, **kwargs):
        from sphinx import addnodes

        docs = os.path.join(ROOT, "docs")
        here = os.path.dirname(self.env.doc2path(self.env.docname))
        for ref in list(self.document.findall(addnodes.pending_xref)):
            if ref.get("reftype") != "myst" or ref.get("refdomain") not in ("doc", None):
                continue
            target = ref["reftarget"]
            if ref.get("refdomain") == "doc":        # a .md file MyST found: the document it would be
                if target in self.env.found_docs or not os.path.isabs(target):
                    continue
                rel = os.path.relpath(target, self.env.srcdir) + ".md"
            else:                                    # a file MyST did not find (rosdoc2's copy of docs/)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                rel = os.path.join(os.path.dirname(self.env.docname), target.split("#")[0])
            # the file as the page names it, from docs/ of the repository (rosdoc2 builds a copy elsewhere)
            path = os.path.normpath(os.path.join(docs, rel))
            if not os.path.isfile(path) or path.startswith(docs + os.sep) or not path.startswith(ROOT + os.sep):
                continue
            link = addnodes.download_reference(refdomain=None, reftarget=os.path.relpath(path, here),
                                               refdoc=self.env.docname, reftype="myst",
                                               refexplicit=ref.get("refexplicit", False))
            link += ref.children
            ref.replace_self(link)


_LITERAL = re.compile(r"(``.*?``)")


def plain_bars(app, what, name, obj, options, lines):
    """The docstrings write ``|x|`` for a magnitude, as in plain text; reST would read it as a substitution (there
    are none in this package): a bar outside a literal is a bar."""
    for i, line in enumerate(lines):
        lines[i] = "".join(part if part.startswith("``") else part.replace("|", "\\|")
                           for part in _LITERAL.split(line))


def _mermaid_as_text():
    """A ``mermaid`` directive that shows the flowchart's text (where sphinxcontrib-mermaid is not installed,
    e.g. a ROS build farm that installs only rosdoc2's own dependencies)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class MermaidText(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = {}

        def run(self):
            text = "\n".join(self.content)
            return [nodes.literal_block(text, text)]

    return MermaidText


def setup(app):
    app.add_transform(RepositoryLinks)
    if not HAVE_MERMAID:
        app.add_directive("mermaid", _mermaid_as_text())
    app.connect("autodoc-process-docstring", plain_bars)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
