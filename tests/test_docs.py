"""The manual, built as `./run.sh docs` builds it, opened page by page in headless Chromium.

The site is built once per session into a temporary folder (Sphinx, offline, warnings as
errors) by the worker that then crawls it, unless ``$EMBEDKIT_DOCS_HTML`` names a site `./run.sh
docs` has just built. Then every page is opened in the browser (of the API pages, one template,
the index and the three namespaces' pages; every other is read from its HTML) and the test fails
on: a link to a page, file or anchor of the site that does not exist, an image that does not
load, a console error, anything fetched from the network, an API page without its class or
function, a public name of ``embedkit``, ``embedkit.representations`` or ``embedkit.heads``
without its API page, a notebook page without its figures, or a results file without its
benchmark page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).parents[1]
RESULTS = ROOT / "pipelines" / "benchmarks" / "results"

# one worker builds and crawls the site once for all these tests (`./run.sh test` runs pytest-xdist
# with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("docs")


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("EMBEDKIT_DOCS_HTML")
    if given:
        assert (Path(given) / "index.html").exists(), f"EMBEDKIT_DOCS_HTML={given} holds no built site"
        return Path(given)
    out = tmp_path_factory.mktemp("docs") / "html"
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-q",
                            "docs", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0 and not build.stderr.strip(), (
        f"the docs build failed or warned (exit {build.returncode}):\n{build.stderr[-5000:]}")
    return out


def _pages(site: Path) -> list[Path]:
    """The site's pages (the theme's static files hold HTML templates, not pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


#: what the browser reads off one page
_READ = """
const here = location.href.split('#')[0];
return {
  links: [...document.querySelectorAll('a[href]')].map(a => a.href)
           .filter(h => h.startsWith('file:') && h.split('#')[0] !== here || h.startsWith(here + '#')),
  images: [...document.querySelectorAll('img')].map(i => [i.currentSrc || i.src,
                                                          i.complete && i.naturalWidth > 0]),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  fetched: performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('file:')),
  api: [...document.querySelectorAll('dl.py > dt[id]')].map(dt => [
    dt.parentElement.classList[1], dt.id, (dt.nextElementSibling?.textContent || '').trim().length]),
};
"""


#: the pages every browser visit stands for: the API pages are one template (autodoc's), whose
#: scripts, styles and fonts the other pages load too; of them the browser opens the index and
#: the pages of the three namespaces, and every one is read from its HTML (links, anchors,
#: images on disk, API entries) by `_StaticPage`
_OPENED_API = {"index.html", "embedkit.html", "embedkit.representations.html", "embedkit.heads.html"}


class _StaticPage(HTMLParser):
    """What `_READ` finds on a page, read from its HTML: links to the site (resolved as the
    browser resolves them), images (loaded: the file is on disk and not empty), element ids and
    ``dl.py > dt[id]`` entries with the length of their next sibling's text."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}

    def __init__(self, page: Path):
        super().__init__(convert_charrefs=True)
        self.page, self.here = page, page.as_uri()
        self.seen = {"links": [], "images": [], "ids": [], "fetched": [], "api": [], "errors": []}
        self.stack: list[tuple[str, list[str]]] = []  # the open elements and their classes
        self.entry, self.depth, self.counting = None, 0, False  # a dt's entry, at its depth

    def read(self) -> dict:
        self.feed(self.page.read_text(encoding="utf-8"))
        return self.seen

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.seen["ids"].append(attrs["id"])
        if tag == "a" and attrs.get("href") is not None:
            href = attrs["href"]
            url = self.here + href if href.startswith("#") else urljoin(self.here, href)
            if url.startswith("file:") and urldefrag(url)[0] != self.here or url.startswith(self.here + "#"):
                self.seen["links"].append(url)
        if tag == "img":
            path = _target(urljoin(self.here, attrs.get("src", "")))[0]
            self.seen["images"].append([path.as_uri(), path.is_file() and path.stat().st_size > 0])
        parent, classes = self.stack[-1] if self.stack else ("", [])
        if tag == "dt" and parent == "dl" and classes[:1] == ["py"] and attrs.get("id"):
            self.entry, self.depth = [classes[1] if len(classes) > 1 else "", attrs["id"], 0], len(self.stack)
            self.seen["api"].append(self.entry)
        elif self.entry is not None and len(self.stack) == self.depth:  # the dt's next sibling
            self.counting = True
        if tag not in self.VOID:
            self.stack.append((tag, (attrs.get("class") or "").split()))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self.stack and self.stack.pop()[0] != tag:  # an end tag closes what it encloses
            pass
        if self.entry is not None and (len(self.stack) < self.depth or self.counting
                                       and len(self.stack) == self.depth):
            self.entry, self.counting = None, False  # the sibling (or the list) ended

    def handle_data(self, data):
        if self.counting:
            self.entry[2] += len(data.strip())


@pytest.fixture(scope="session")
def crawl(site, browser):
    """Every page of the site: path -> what `_READ` found, in the browser for every page but
    the API pages outside `_OPENED_API`, read by `_StaticPage` for those."""
    from _browser import severe_errors
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(1280, 1000)
    found = {}
    for page in _pages(site):
        if page.parent == site / "api" and page.name not in _OPENED_API:
            found[page] = _StaticPage(page).read()
            continue
        browser.get(page.as_uri())
        # chromedriver may return from a file:// load early: wait for the load event (images too)
        WebDriverWait(browser, 30).until(
            lambda driver: driver.execute_script("return document.readyState") == "complete")
        seen = browser.execute_script(_READ)
        seen["errors"] = severe_errors(browser)
        found[page] = seen
    return found


def _target(url: str) -> tuple[Path, str]:
    address, fragment = urldefrag(url)
    return Path(unquote(urlparse(address).path)), unquote(fragment)


def test_every_internal_link_reaches_a_page_file_or_anchor(site, crawl):
    assert len(crawl) > 50 and (site / "index.html") in crawl
    broken = []
    for page, seen in crawl.items():
        for url in seen["links"]:
            path, fragment = _target(url)
            if path.is_dir():
                path = path / "index.html"
            where = page.relative_to(site)
            if not path.exists():
                broken.append(f"{where}: {url} (no such file)")
            elif fragment and path.suffix == ".html" and path in crawl and fragment not in crawl[path]["ids"]:
                broken.append(f"{where}: {url} (no #{fragment} on that page)")
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(sorted(set(broken))[:40])


def test_every_image_loads_and_nothing_is_fetched_or_fails(site, crawl):
    missing = [f"{p.relative_to(site)}: {src}" for p, seen in crawl.items()
               for src, loaded in seen["images"] if not loaded]
    assert not missing, "images that do not load:\n" + "\n".join(missing)
    fetched = {f"{p.relative_to(site)}: {u}" for p, seen in crawl.items() for u in seen["fetched"]}
    assert not fetched, "pages that fetch from the network (the site must work offline):\n" + \
        "\n".join(sorted(fetched)[:20])
    errors = {f"{p.relative_to(site)}: {e}" for p, seen in crawl.items() for e in seen["errors"]}
    assert not errors, "console errors:\n" + "\n".join(sorted(errors)[:20])


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_every_api_page_documents_its_object(site, crawl):
    """A top-level name's page documents it; a module's page documents the module and every
    class and function it lists (each name in its table links to an entry, here or on the
    page of the top-level name)."""
    pages = [p for p in crawl if p.parent == site / "api" and p.name != "index.html"]
    assert len(pages) > 60
    empty = []
    everywhere = {dt_id for seen in crawl.values() for _, dt_id, _ in seen["api"]}
    for page in pages:
        name, seen = page.stem, crawl[page]
        here = {dt_id: (kind, length) for kind, dt_id, length in seen["api"]}
        empty += [f"api/{page.name}: {dt_id} is documented without a description"
                  for dt_id, (kind, length) in here.items()
                  if kind in ("class", "function", "exception") and not length]
        if _is_module(name):
            if f"module-{name}" not in seen["ids"]:
                empty.append(f"api/{page.name}: no entry for the module {name}")
            listed = {_target(url)[1] for url in seen["links"] if "/api/" in url}
            empty += [f"api/{page.name}: {target} is listed but not documented" for target in listed
                      if target.startswith("embedkit.") and target not in everywhere]
        elif name not in here:
            empty.append(f"api/{page.name}: no class or function entry for {name}")
    assert not empty, "API pages without their object:\n" + "\n".join(empty)


@pytest.mark.parametrize("namespace", ["embedkit", "embedkit.representations", "embedkit.heads"])
def test_every_public_name_has_its_api_page(site, crawl, namespace):
    import importlib

    module = importlib.import_module(namespace)
    page = site / "api" / f"{namespace}.html"
    assert page in crawl, f"no API page for {namespace}"
    documented = {dt_id for seen in crawl.values() for _, dt_id, _ in seen["api"]}
    linked = {_target(url)[1] for url in crawl[page]["links"]}
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        # documented once, under the name users import it by (embedkit.X before its subpackage)
        targets = [f"embedkit.{name}", f"{namespace}.{name}", f"{obj.__module__}.{name}"]
        if not any(t in documented and t in linked for t in targets):
            missing.append(name)
    assert not missing, f"public names of {namespace} without an API entry linked from its page: {missing}"


def test_notebook_pages_show_every_figure(site, crawl):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        figures = sum("image/png" in out.get("data", {}) for c in cells for out in c.get("outputs", []))
        page = site / "notebooks" / f"{notebook.stem}.html"
        assert page in crawl, f"no page for notebooks/{notebook.name}"
        shown = [src for src, loaded in crawl[page]["images"] if loaded]
        assert len(shown) >= figures > 0, f"{notebook.name}: {figures} figures, {len(shown)} shown"


def test_every_results_file_has_its_benchmark_page_with_a_command(site, crawl):
    for results in sorted(RESULTS.glob("*.md")):
        page = site / "benchmarks" / f"{results.stem}.html"
        assert page in crawl, f"no benchmark page for {results.relative_to(ROOT)}"
        text = page.read_text(encoding="utf-8")
        assert "pipelines/benchmarks/" in text and ("python " in text or "embedkit " in text), (
            f"{results.relative_to(ROOT)} names no command that made its figures")
    # the GPU guide's link holds before the GPU results exist
    assert (site / "benchmarks" / "bench_gpu.html") in crawl


def test_the_tuning_settings_page_lists_every_number_the_search_decides_by(site, crawl):
    """Issue 46: every constant of embedkit/tuning/_settings.py, and the tiers, on one page,
    with its value and where that value came from."""
    from embedkit.tuning import _settings
    from embedkit.tuning._schedule import TIERS

    page = site / "tuning-settings.html"
    assert page in crawl
    text = page.read_text(encoding="utf-8")
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", text, re.S)]
    named = {re.sub(r"<[^>]+>", "", cells[0]): cells for cells in rows if len(cells) == 3}
    for name in _settings.__all__:  # each in a table row, with its value and its origin
        cells = next((c for names, c in named.items() if name in re.split(r"[,\s]+", names)), None)
        assert cells is not None, f"{name} is not on the tuning settings page"
        assert re.sub(r"<[^>]+>", "", cells[1]).strip() and len(re.sub(r"<[^>]+>", "", cells[2])) > 20
    for tier in TIERS:
        assert tier.name in text
    assert "WORK_EXPONENT" in text and "DECIDING" in text and "MAX_DOCUMENT_CHARS" in text
