"""The documents: README.md stays short, every page is reachable from it, no relative link is dead,
and the CLI reference is what the parsers print now."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _relative_links(page: Path) -> list[str]:
    """The targets of the page's Markdown links that are paths here (no URL, no bare #anchor), without
    their #anchor; code blocks and code spans are not read (help text may look like a link)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:|#", t)]


def test_cli_reference_is_current():
    ref = _cli_reference()
    assert ref.OUT.read_text() == ref.render(), \
        "docs/cli.md is stale (a command's --help changed): run python scripts/cli_reference.py"


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n < 200, f"README.md has {n} lines; it is the five-minute page: move the detail into docs/"


def test_relative_links_resolve():
    dead = [f"{page.relative_to(ROOT)}: {target}"
            for page in [README, *sorted(DOCS.glob("*.md"))]
            for target in _relative_links(page) if not (page.parent / target).exists()]
    assert not dead, "links to files that do not exist:\n" + "\n".join(dead)


def test_readme_links_every_docs_page():
    linked = {(ROOT / t).resolve() for t in _relative_links(README)}
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"docs pages README.md does not link: {', '.join(unlinked)}"


def test_readme_result_table_is_the_report():
    """README's one result table is a copy of the summary in reports/variants.md."""
    table = [line for line in README.read_text().splitlines()
             if line.startswith("|") and re.search(r"\d\.\d{3}x", line)]  # its ratios: 1.000x
    assert table, "README.md has no result table"
    report = (ROOT / "reports" / "variants.md").read_text().splitlines()
    stale = [line for line in table if line not in report]
    assert not stale, ("README.md's result table differs from reports/variants.md's summary (copy it):\n"
                       + "\n".join(stale))
