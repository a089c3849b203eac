"""The generated pages of the documentation, written before Sphinx reads its sources.

Nothing listed here is written by hand, so the documentation cannot disagree with the
code or the configs:

* ``generated/catalogue.md``: every registered mechanism class
  (:func:`mechanisms.registry.registered`: the built-ins, the peers and any installed
  entry-point plug-in), with what the class declares (name, display name, statistics,
  δ, ⊥), its guarantee under each neighbouring relation it supports (read from a
  configured instance, so the kind and the source are the ones the harness records), and
  its options with their defaults from the constructor signatures;
* ``generated/configs.md``: the experiments, statistics, datasets and mechanism entries
  of the config tree (``conf/experiment``, ``conf/statistic``, ``conf/dataset``,
  ``conf/mechanism``), each experiment as Hydra composes it;
* ``generated/api/*.rst``: one autodoc page per package of :mod:`mechanisms` and
  :mod:`experiments`, every module found by walking the packages.

Sphinx runs :func:`write_generated` on ``builder-inited``; a file is rewritten only when
its text changes, so an unchanged page is not read again.  ``tests/scripts/test_docs.py``
checks the lists against the config tree and the registry.
"""

from __future__ import annotations

import inspect
import pkgutil
import re
from collections.abc import Iterable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
CONF = ROOT / "conf"
GENERATED = DOCS / "generated"
GROUPS = ("experiment", "statistic", "dataset", "mechanism")
API_PACKAGES = ("mechanisms", "experiments")
NEIGHBOURINGS = ("add_remove", "replace_one")
KINDS = {
    "pure": "ε-DP",
    "approximate": "(ε, δ)-DP",
    "zcdp": "ρ-zCDP (ρ = ε²/2), stated as (ε′, δ)-DP",
}
PROBE_EPSILON, PROBE_DELTA = 1.0, 1e-6
"""The privacy parameters of the instance each guarantee is read from."""
_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def escape(text: object) -> str:
    """``text`` as literal Markdown (inline: no emphasis, links, HTML or table breaks)."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def code(text: object) -> str:
    """``text`` as inline code (a table cell may hold it: ``|`` is escaped)."""
    return "``" + str(text).replace("|", "\\|") + "``"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------ the mechanism catalogue


def options(cls: type) -> dict[str, inspect.Parameter]:
    """Keyword options of ``cls`` other than ε and δ with their constructor parameters,
    following ``**options`` up the MRO (as :func:`mechanisms.core.registration.options_of`
    does); a subclass's default wins."""
    found: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        parameters = inspect.signature(vars(klass)["__init__"]).parameters.values()
        for p in parameters:
            keyword = p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
            if keyword and p.name not in ("self", "epsilon", "delta"):
                found.setdefault(p.name, p)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return found


def guarantees(cls: type) -> list[tuple[str, Any]]:
    """(neighbouring asked for, guarantee) for each relation ``cls`` can be configured for:
    both, through its ``neighbours`` option if it takes one, else its declared one.  None for
    a class whose optional library is not installed (it cannot be configured)."""
    import mechanisms

    if not cls.installed():
        return []
    epsilon = PROBE_EPSILON if cls.requires_epsilon else None
    delta = PROBE_DELTA if cls.requires_delta else None
    asked = NEIGHBOURINGS if "neighbours" in options(cls) else (None,)
    out = []
    for relation in asked:
        extra = {} if relation is None else {"neighbours": relation}
        try:
            mechanism = mechanisms.configure(cls, epsilon=epsilon, delta=delta, **extra)
        except ValueError:
            continue  # a relation the class refuses
        out.append((relation or mechanism.guarantee.neighbouring.value, mechanism.guarantee))
    return out


def guarantee_kind(guarantee: Any) -> str:
    if guarantee.epsilon == float("inf"):
        return "none (not private: ε = ∞)"
    kind = KINDS[guarantee.kind]
    if guarantee.data_dependent_tuning:
        kind += ", NOT private as configured (tuned on the data)"
    return kind


def declared(cls: type) -> str:
    """What a class declares of its guarantee, for one that cannot be configured here."""
    kind = KINDS["approximate" if cls.requires_delta else "pure"]
    return f"{kind} ({cls.neighbouring.value}) as declared: its library is not installed here"


def summary_guarantees(cls: type, found: list[tuple[str, Any]]) -> str:
    """``ε-DP (add_remove, replace_one)``: each kind once, with its relations."""
    if not found:
        return escape(declared(cls))
    kinds: dict[str, list[str]] = {}
    for relation, guarantee in found:
        kinds.setdefault(guarantee_kind(guarantee), []).append(relation.replace("_", "\\_"))
    return "; ".join(f"{kind} ({', '.join(relations)})" for kind, relations in kinds.items())


def catalogue_markdown() -> str:
    """The mechanism catalogue page."""
    from mechanisms.core.registration import supported_statistics
    from mechanisms.registry import registered

    classes = registered()
    lines = [
        "# Mechanism catalogue",
        "",
        "Generated from the registered classes (`mechanisms.registry.registered()`) when the",
        "documentation is built: what each class declares, its guarantee under each",
        "neighbouring relation it can be configured for (read from an instance at",
        f"ε = {PROBE_EPSILON:g}, δ = {PROBE_DELTA:g} where the class needs δ) and its options",
        "with the defaults of its constructor.  `mechanisms.make(name, epsilon=…, delta=…,",
        "**options)` configures one; `conf/mechanism/` holds the configured entries the",
        "experiments name ([](configs.md)).",
        "",
        table(
            ["name", "display name", "statistics", "guarantee (neighbouring)"],
            (
                [
                    f"{{ref}}`{name} <mechanism-{name}>`",
                    escape(cls.display_name) or "—",
                    ", ".join(sorted(supported_statistics(cls))),
                    summary_guarantees(cls, guarantees(cls)),
                ]
                for name, cls in sorted(classes.items())
            ),
        ),
        "",
    ]
    for name, cls in sorted(classes.items()):
        doc = inspect.getdoc(cls) or ""
        summary = doc.split("\n\n")[0]
        lines += [
            f"(mechanism-{name})=",
            f"## {name}",
            "",
            f"{escape(summary)}",
            "",
            f"- class: {{py:class}}`{cls.__module__}.{cls.__qualname__}`"
            + ("" if cls.installed() else " (its library is not installed here)"),
            f"- display name: {escape(cls.display_name) if cls.display_name else '— (the label)'}",
            f"- statistics: {', '.join(sorted(cls.statistics))}"
            + (
                f" (family `{cls.family}`: {', '.join(sorted(supported_statistics(cls)))})"
                if cls.family
                else ""
            ),
            f"- takes ε: {'yes' if cls.requires_epsilon else 'no'}; "
            f"needs δ: {'yes' if cls.requires_delta else 'no'}; "
            f"may answer ⊥: {'yes' if cls.may_refuse else 'no'}",
            "",
        ]
        read = guarantees(cls)
        if read:
            rows = ([relation, guarantee_kind(g), escape(g.source)] for relation, g in read)
            lines += [
                table(["neighbouring", "guarantee", "source (as the guarantee states it)"], rows),
                "",
            ]
        else:
            lines += [f"Guarantee: {escape(declared(cls))}.", ""]
        found = options(cls)
        if found:
            lines += [
                table(
                    ["option", "default"],
                    (
                        [
                            code(p.name),
                            "(required)" if p.default is p.empty else code(repr(p.default)),
                        ]
                        for p in found.values()
                    ),
                ),
                "",
            ]
    return "\n".join(lines)


# ------------------------------------------------------------------ the config tree


def group_files(group: str) -> list[Path]:
    """The YAML files of ``conf/<group>``, sorted; ``_base`` and other ``_`` files are not
    experiments."""
    return sorted(p for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))


def header_comment(path: Path) -> str:
    """The comment lines at the top of a YAML file, without ``#`` (``@package`` dropped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if not text.startswith("@package"):
            out.append(text)
    return " ".join(out)


def composed(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``conf/config.yaml`` with ``experiment=name`` for each name, as Hydra composes it
    (interpolations unresolved)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    out = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for name in names:
            cfg = compose("config", overrides=[f"experiment={name}"])
            container = OmegaConf.to_container(cfg, resolve=False)
            assert isinstance(container, dict)
            out[name] = container
    return out


def entry_name(entry: object) -> str:
    """How a list entry of an experiment reads: a name, or an inline entry's label with
    what it is (the entry it extends or the class it names, its options)."""
    if not isinstance(entry, Mapping):
        return str(entry)
    label = str(entry.get("label", entry.get("name", "?")))
    base = entry.get("extends") or entry.get("_target_")
    if base is None and "label" in entry:
        base = entry.get("name")
    details = [f"= {base}"] if base and base != label else []
    if entry.get("options"):
        details.append(str(entry["options"]))
    if entry.get("statistics"):
        details.append("on " + ", ".join(entry["statistics"]))
    return label + (f" ({'; '.join(details)})" if details else "")


def _entry_cells(entry: Mapping[str, Any]) -> tuple[str, str]:
    target = entry.get("_target_") or entry.get("name") or ""
    extends = entry.get("extends")
    what = code(target) if target else ""
    if extends:
        what = f"extends {code(extends)}" + (f", {what}" if what else "")
    opts = entry.get("options")
    return what or "—", code(opts) if opts else "—"


def experiment_markdown(name: str, cfg: Mapping[str, Any]) -> str:
    """What ``experiment=name`` runs, as Hydra composes it: a list for its page."""
    path = CONF / "experiment" / f"{name}.yaml"

    def listed(key: str) -> str:
        return ", ".join(escape(entry_name(e)) for e in cfg.get(key) or []) or "—"

    return "\n".join(
        [
            f"- {escape(header_comment(path))}",
            f"- datasets: {listed('datasets')}",
            f"- statistics: {listed('statistics')}",
            f"- mechanisms: {listed('mechanisms')}",
            f"- ε ∈ {escape(cfg['epsilons'])}; δ = {escape(cfg['delta'])} (for the mechanisms "
            f"that take δ); n = {cfg['n']} per synthetic dataset; {cfg['replicates']} "
            f"replicates × {cfg['trials']} trials; seed {cfg['seed']}"
            + ("; every estimate kept (`estimates.npz`)" if cfg.get("keep_estimates") else ""),
            f"- config file: `conf/experiment/{name}.yaml`",
            "",
        ]
    )


def experiments() -> dict[str, dict[str, Any]]:
    """Every experiment of ``conf/experiment`` composed, by name."""
    return composed(path.stem for path in group_files("experiment"))


def configs_markdown(composed_experiments: Mapping[str, Mapping[str, Any]]) -> str:
    """The config-tree page: experiments, statistics, datasets, mechanism entries."""
    from experiments.harness.conf_files import load_entry

    lines = [
        "# Experiments, statistics, datasets and mechanism entries",
        "",
        "Generated from the config tree (`conf/`) when the documentation is built.  An",
        "experiment is chosen with `experiment=NAME`; statistics, datasets and mechanisms are",
        "named inside the lists `statistics=[…]`, `datasets=[…]` and `mechanisms=[…]`",
        "(see [](../harness.md)).  Each name below is the stem of a YAML file; a user's",
        "`--config-dir` adds more ([](../plugins.md)).",
        "",
        "(config-experiments)=",
        "## Experiments (`conf/experiment/`)",
        "",
    ]
    for name, cfg in composed_experiments.items():
        page = DOCS / "experiments" / f"{name}.md"
        link = [f"Its page: [](../experiments/{name}.md).", ""] if page.is_file() else []
        lines += [f"(experiment-{name})=", f"### {name}", "", *link, experiment_markdown(name, cfg)]
    titles = {
        "statistic": "Statistics (`conf/statistic/`)",
        "dataset": "Datasets (`conf/dataset/`)",
        "mechanism": "Mechanism entries (`conf/mechanism/`)",
    }
    for group in ("statistic", "dataset", "mechanism"):
        rows = []
        for path in group_files(group):
            entry = load_entry(CONF, group, path.stem)
            what, opts = _entry_cells(entry)
            rows.append([code(path.stem), what, opts, escape(header_comment(path))])
        lines += [
            f"(config-{group}s)=",
            f"## {titles[group]}",
            "",
            table([group if group != "mechanism" else "label", "class", "options", "note"], rows),
            "",
        ]
    return "\n".join(lines)


# ------------------------------------------------------------------ the API reference


def modules(package: str) -> list[str]:
    """``package`` and every module below it, sorted."""
    root = import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        found.append(info.name)
    return sorted(found)


def api_pages() -> dict[str, str]:
    """One reStructuredText page per subpackage of :data:`API_PACKAGES` (by file stem)."""
    pages: dict[str, str] = {}
    for package in API_PACKAGES:
        groups: dict[str, list[str]] = {}
        for module in modules(package):
            parts = module.split(".")
            groups.setdefault(".".join(parts[:2]), []).append(module)
        for group, members in sorted(groups.items()):
            title = f"``{group}``"
            text = [title, "=" * len(title), ""]
            for module in members:
                heading = f"``{module}``"
                if module != group:
                    text += [heading, "-" * len(heading), ""]
                # the module's own members: a facade's re-exports are documented where
                # they are defined
                text += [f".. automodule:: {module}", "   :ignore-module-all:", ""]
            pages[group] = "\n".join(text)
    return pages


def api_index(pages: Mapping[str, str]) -> str:
    lines = [
        "API reference",
        "=============",
        "",
        "From the docstrings, one page per package (every module is found by walking the",
        "packages when the documentation is built).",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    return "\n".join(lines + [f"   {name}" for name in pages]) + "\n"


# ------------------------------------------------------------------ writing


def generated() -> dict[str, str]:
    """Every generated page by its path under ``generated/``."""
    pages = api_pages()
    composed_experiments = experiments()
    out = {
        "catalogue.md": catalogue_markdown() + "\n",
        "configs.md": configs_markdown(composed_experiments) + "\n",
        "api/index.rst": api_index(pages),
    }
    out |= {
        f"experiments/{name}.md": experiment_markdown(name, cfg)
        for name, cfg in composed_experiments.items()
    }
    out |= {f"api/{name}.rst": text + "\n" for name, text in pages.items()}
    return out


def write_generated(out_dir: Path = GENERATED) -> list[Path]:
    """Write the generated pages; returns those whose text changed.  A stale page (of a
    module or package that is gone) is removed."""
    pages = generated()
    changed = []
    for rel, text in pages.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for stale in out_dir.rglob("*"):
        if stale.is_file() and stale.relative_to(out_dir).as_posix() not in pages:
            stale.unlink()
    return changed


_LITERAL = re.compile(r"(``.*?``)")
_KEEP_BARS = re.compile(r"\|(\s|$)|\+[-=+]+\+\s*$|\|.* \| .*\|\s*$|>>>|\.\.\. ")
"""Lines whose bars are syntax: line blocks, grid tables, doctests."""


def plain_bars(lines: list[str]) -> list[str]:
    """The docstring ``lines`` with every ``|`` of running text escaped.

    The docstrings write absolute values the mathematical way, ``|T(S) − M(S)|``, which
    reStructuredText would read as a substitution reference.  Left as they are: inline
    literals (double backquotes), literal blocks (after ``::``), doctest lines, line blocks
    and grid tables (:data:`_KEEP_BARS`).
    """
    out, literal_indent = [], None
    for line in lines:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                out.append(line)
                continue
            literal_indent = None
        if "|" not in line or _KEEP_BARS.match(stripped):
            out.append(line)
        else:
            parts = _LITERAL.split(line)
            out.append("".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts)))
        if line.rstrip().endswith("::"):
            literal_indent = indent
    return out


def _on_docstring(
    app: Any, what: str, name: str, obj: object, options: Any, lines: list[str]
) -> None:
    lines[:] = plain_bars(lines)


def _on_missing_reference(app: Any, env: Any, node: Any, contnode: Any) -> None:
    """A Python cross-reference of a hand-written page that names nothing documented is a
    warning (so an error under ``-W``): the pages may not name a module, class or function
    that was renamed.  The docstrings' own references stay lenient (they name the standard
    library, numpy, private helpers)."""
    from sphinx.util import logging

    in_api = str(node.get("refdoc", "")).startswith("generated/api/")
    if node.get("refdomain") == "py" and not in_api:
        logging.getLogger(__name__).warning(
            "%s:%s does not name a documented object",
            node.get("reftype"),
            node.get("reftarget"),
            location=node,
        )


def _on_builder_inited(app: Any) -> None:
    write_generated(Path(app.srcdir) / "generated")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    app.connect("autodoc-process-docstring", _on_docstring)
    app.connect("missing-reference", _on_missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
