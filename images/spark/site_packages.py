"""Print the site-packages entries (folders, modules, .dist-info) of the given distributions and of what they
need at run time (extras left out), one a line, relative to site-packages: what the Spark image copies from the
venv for the analysis's Python on executors. Run with the venv's interpreter."""
import importlib.metadata as md
import sys

from packaging.requirements import Requirement


def closure(names):
    seen, todo = {}, list(names)
    while todo:
        dist = md.distribution(todo.pop())
        name = dist.metadata["Name"].lower()
        if name in seen:
            continue
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen.values()


def top_level(dist):
    return {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}


entries = set().union(*(top_level(d) for d in closure(sys.argv[1:])))
print("\n".join(sorted(e for e in entries if e != "__pycache__")))
