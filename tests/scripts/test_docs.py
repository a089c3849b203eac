"""The documentation (``docs/``, ``make docs``) and the README as the front door.

``make test`` builds the documentation strictly (``sphinx-build -W``) before pytest runs;
these tests check that it does, that the README stays a short front door, that the lists
the docs generate (``docs/_ext/duff_docs.py``) name every experiment, statistic, dataset,
mechanism entry and registered mechanism, that the hand-written pages name only files and
mechanisms that exist, and that the plug-in guide's module and config work as written.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml
from harness_mechanisms import PROJECT_ROOT

import mechanisms
from experiments.audit.exact import audit
from experiments.harness.conf_files import load_entry
from experiments.harness.plan import build_plan
from mechanisms import registry
from mechanisms.core import registration

DOCS = PROJECT_ROOT / "docs"
README = PROJECT_ROOT / "README.md"
CONF = PROJECT_ROOT / "conf"
HEAD_LINES, MAX_LINES = 40, 250
EXPERIMENT_PAGES = [
    *("figure1", "figure1_replace_one", "figure2", "quantiles", "peers", "mode", "mean"),
    *("ptr", "intervals", "trimmed_mean_hypothesis", "bounds", "multi_quantiles"),
    *("loose_bounds", "atoms", "real_data", "decomposition"),
]
REPO_PATH = re.compile(
    r"`((?:tests|mechanisms|experiments|conf|examples|scripts|benchmarks|results/reference"
    r"|results/baselines|docs/measured)/[\w./-]*)`"
)
"""A file or folder of the repository quoted in a page (outputs of a run are not)."""


def pages() -> list[Path]:
    return [README, *(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0]
                      not in ("_build", "generated"))]  # fmt: skip


@pytest.fixture(scope="module")
def duff_docs() -> ModuleType:
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return importlib.import_module("duff_docs")
    finally:
        sys.path.remove(str(DOCS / "_ext"))


GENERATE = """
import json, sys
sys.path.insert(0, "docs/_ext")
import duff_docs
from mechanisms import registry

pages = duff_docs.generated()
classes = {name: f"{c.__module__}.{c.__qualname__}" for name, c in registry.registered().items()}
print(json.dumps({"pages": pages, "registered": classes}))
"""


@pytest.fixture(scope="module")
def generation() -> dict[str, Any]:
    """Every generated page, as ``make docs`` writes it, and the registered classes it saw:
    in a process of their own, as the build does (a test's plug-ins stay out)."""
    done = subprocess.run(
        [sys.executable, "-c", GENERATE], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def generated(generation: dict[str, Any]) -> dict[str, str]:
    return generation["pages"]


def stems(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))


# ------------------------------------------------------------------ the build


def test_make_test_builds_the_docs_strictly_before_the_tests() -> None:
    """``make test`` runs ``make docs``, a ``sphinx-build`` whose warnings are errors."""
    dry = subprocess.run(
        ["make", "-n", "test"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    builds = [i for i, line in enumerate(dry) if "sphinx-build" in line]
    tests = [i for i, line in enumerate(dry) if "pytest" in line]
    assert builds and tests and builds[0] < tests[0], dry
    build = dry[builds[0]].split()
    assert "-W" in build and "--keep-going" in build
    assert build[-2:] == ["docs", "docs/_build/html"]


def test_the_build_folders_are_git_ignored() -> None:
    for folder in ("docs/_build/html/index.html", "docs/generated/catalogue.md"):
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", folder], cwd=PROJECT_ROOT, check=False
        )
        assert ignored.returncode == 0, folder


# ------------------------------------------------------------------ the README


def test_the_readme_is_a_short_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES
    head = "\n".join(lines[:HEAD_LINES])
    assert "<!--n:" not in head and "readme_numbers:" not in head  # raw text, readable
    assert head.index("make figure1") < head.index("make test") < head.index("![Figure 1]")
    assert ". .venv/bin/activate" in head


def test_the_readme_links_every_page() -> None:
    """Each hand-written page is linked from the README (the generated ones are only built)."""
    text = README.read_text(encoding="utf-8")
    for page in pages()[1:]:
        assert f"({page.relative_to(PROJECT_ROOT).as_posix()})" in text, page


# ------------------------------------------------------------------ the generated lists


@pytest.mark.parametrize("group", ["experiment", "statistic", "dataset", "mechanism"])
def test_the_config_lists_name_every_entry_of_the_config_tree(
    generated: dict[str, str], group: str
) -> None:
    configs = generated["configs.md"]
    section = configs.split(f"(config-{group}s)=")[1].split("\n(config-")[0]
    assert stems(group), group
    for name in stems(group):
        if group == "experiment":
            assert f"(experiment-{name})=\n### {name}\n" in section
        else:
            assert f"| ``{name}`` |" in section, name


def test_every_experiment_has_its_generated_summary_and_its_page(
    generated: dict[str, str],
) -> None:
    assert {f"experiments/{name}.md" for name in stems("experiment")} <= set(generated)
    for name in EXPERIMENT_PAGES:
        page = (DOCS / "experiments" / f"{name}.md").read_text(encoding="utf-8")
        if name in stems("experiment"):
            assert f"../generated/experiments/{name}.md" in page, name
        assert "## Reproduce" in page and "duff-plot" in page, name


def test_the_catalogue_names_every_registered_mechanism(generation: dict[str, Any]) -> None:
    catalogue = generation["pages"]["catalogue.md"]
    named = {load_entry(CONF, "mechanism", stem)["name"] for stem in stems("mechanism")}
    assert named <= set(generation["registered"])  # every class the configs name, at least
    for name, qualified in generation["registered"].items():
        assert f"(mechanism-{name})=\n## {name}\n" in catalogue, name
        assert f"{{py:class}}`{qualified}`" in catalogue, name


def test_the_catalogue_reads_guarantees_and_options_from_the_classes(
    duff_docs: ModuleType, generated: dict[str, str]
) -> None:
    section = generated["catalogue.md"].split("(mechanism-quantile_em)=")[1].split("\n(mech")[0]
    assert "| add_remove | ε-DP |" in section and "| replace_one | ε-DP |" in section
    assert "| ``alpha`` | ``0.5`` |" in section and "| ``bounding`` | ``'clip'`` |" in section
    smooth_laplace = duff_docs.options(registry.get("smooth_laplace"))  # **options up the MRO
    assert {"tuning", "neighbours", "alpha", "bounding"} <= set(smooth_laplace)


def test_every_module_has_an_api_page(generated: dict[str, str], duff_docs: ModuleType) -> None:
    api = "\n".join(text for rel, text in generated.items() if rel.startswith("api/"))
    for package in duff_docs.API_PACKAGES:
        for module in duff_docs.modules(package):
            assert f".. automodule:: {module}\n" in api, module


def test_docstring_bars_are_escaped_outside_literals(duff_docs: ModuleType) -> None:
    lines = ["error |T(S) − M(S)| in ``a|b``", "Usage::", "", "    x | y", "| a line block"]
    assert duff_docs.plain_bars(lines) == [
        "error \\|T(S) − M(S)\\| in ``a|b``",
        "Usage::",
        "",
        "    x | y",
        "| a line block",
    ]


# ------------------------------------------------------------------ the hand-written pages


def test_the_pages_name_only_files_that_exist() -> None:
    for page in pages():
        for match in REPO_PATH.finditer(page.read_text(encoding="utf-8")):
            assert (PROJECT_ROOT / match[1]).exists(), f"{page.name}: {match[1]}"


def test_the_hand_written_mechanism_tables_name_registered_mechanisms() -> None:
    names = set(registry.registered())
    row = re.compile(r"^\| `(\w+)`(?: \([a-z]+\))?(?:, `(\w+)`)? \|", re.M)
    for page in (DOCS / "mechanisms.md", DOCS / "experiments" / "intervals.md"):
        found = [
            name for m in row.finditer(page.read_text(encoding="utf-8")) for name in m.groups()
        ]
        assert found and set(filter(None, found)) <= names, page


# ------------------------------------------------------------------ the plug-in guide


def guide_block(language: str, first_line: str) -> str:
    """The fenced ``language`` block of docs/plugins.md whose first line starts so."""
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    for match in re.finditer(rf"^( *)```{language}\n(.*?)^\1```$", text, re.M | re.S):
        body = "\n".join(line[len(match[1]) :] for line in match[2].splitlines())
        if body.startswith(first_line):
            return body + "\n"
    raise AssertionError(f"no {language} block starting {first_line!r} in docs/plugins.md")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The guide's module and YAML file written out, importable; the registry restored after."""
    (tmp_path / "my_mechanisms.py").write_text(guide_block("python", "# my_mechanisms.py"))
    (tmp_path / "conf" / "mechanism").mkdir(parents=True)
    (tmp_path / "conf" / "mechanism" / "my_laplace.yaml").write_text(
        guide_block("yaml", "# The Laplace mechanism on the median")
    )
    registry.available()  # the built-ins registered before the registry is copied
    monkeypatch.setattr(registration, "_REGISTRY", dict(registration._REGISTRY))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_mechanisms", None)


def sweep(**keys: Any) -> dict[str, Any]:
    return {"seed": 1, "n": 51, "replicates": 1, "trials": 2, "epsilons": [1.0],
            "datasets": ["normal"]} | keys  # fmt: skip


def test_the_guide_s_mechanism_works_as_written(plugin: Path) -> None:
    guide = guide_block("python", "import numpy as np\nimport mechanisms\nimport my_mechanisms")
    exec(compile(guide, "docs/plugins.md", "exec"), {})  # the guide's usage, verbatim
    made = mechanisms.make("my_laplace", epsilon=1.0)
    assert str(made.guarantee) == "1-DP, add_remove neighbours"
    release = made.release(np.random.default_rng(0).normal(size=101), (-10.0, 10.0))
    draws = np.sort(release.sample(20_000, np.random.default_rng(1)))
    points = np.array([-10.0, -1.0, 0.0, 2.0, 10.0])
    empirical = np.searchsorted(draws, points, side="right") / draws.size
    assert np.abs(empirical - release.cdf(points)).max() < 0.02  # sample and cdf agree
    with pytest.raises(ValueError, match="spread"):
        mechanisms.make("my_laplace", epsilon=1.0, spread=0.5)
    result = audit("my_laplace", lambda: made, pairs=8, max_size=200, cells=200, seed=0,
                   resolution=1e-15)  # fmt: skip
    assert result.status == "ok" and 0.99 < result.statistic <= 1 + 1e-6


def test_the_guide_s_four_ways_to_name_it_make_a_plan(plugin: Path) -> None:
    conf_dirs = [plugin / "conf", CONF]
    inline = {"label": "mine", "_target_": "my_mechanisms.LaplaceMedian"}
    registered = {"label": "mine", "name": "my_laplace", "options": {"spread": 2}}
    plans = [
        build_plan(sweep(mechanisms=["duff", inline]), conf_dirs),
        build_plan(sweep(mechanisms=["duff", registered], plugins=["my_mechanisms"]), conf_dirs),
        build_plan(sweep(mechanisms=["duff", "my_laplace"]), conf_dirs),
    ]
    for plan in plans:
        assert [m.cls.name for m in plan.mechanisms] == ["duff", "my_laplace"]
    toml = (DOCS / "plugins.md").read_text(encoding="utf-8")
    assert f'[project.entry-points."{registry.ENTRY_POINT_GROUP}"]' in toml
    assert 'my_laplace = "my_mechanisms:LaplaceMedian"' in toml


def test_the_guide_s_yaml_is_what_the_harness_reads(plugin: Path) -> None:
    entry = yaml.safe_load((plugin / "conf" / "mechanism" / "my_laplace.yaml").read_text())
    assert entry == {
        "label": "my_laplace",
        "_target_": "my_mechanisms.LaplaceMedian",
        "options": {"spread": 1.0},
    }
