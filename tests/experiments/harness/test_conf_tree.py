"""The shipped conf/ tree: every experiment composes to the plan it always had, and no
experiment file restates what it inherits (so duplication cannot creep back).

The config hashes below are those of the experiments before conf/experiment/_base.yaml and
``extends`` existed; a change that moves one changes that experiment's numbers (and, for
``regression``, the accuracy gate's baseline).  When the change is meant, record the new hash.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from experiments.data.vertebral import VertebralColumn, locate_vertebral
from experiments.harness.conf_files import group_names, load_entry
from experiments.harness.plan import build_plan

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONF_DIR = PROJECT_ROOT / "conf"
BASELINE = PROJECT_ROOT / "results" / "baselines" / "regression.csv"
CONFIG_HASHES = {
    "atoms": "886cd8d6b09c82d356f81026d67c52f178d71c88665438d3238d8c46abd92160",
    "loose_bounds": "48776ec56b31fb90109627f1a45045da84b2e8a86e91ac919ae99f7a5d723a3f",
    "decomposition": "5742437f6a8f68e6aab7b934640b746c6bb23ac24f540e04bea6efff9297113f",
    "real_data": "ffa39f4c130cc58baa5d745a6c5be477f50f4c62888e9c9b715c83df19bdc1bb",
    "scoring_pairings": "ecb49d24e041ce044134fba9fde54ad047ca72ef5f4860ed3a227f9d141bd702",
    "unbounded": "e98fd942447264c9883f2792c5229d2278b70bbebef5c025e2bac726cb8d92e8",
    "figure1": "b5fc9781b384069b1f9c18d7895ed8ec7909f4791e1d1b591f586072d4b7a588",
    "figure1_replace_one": "9fe0df93240d755e1725322cd3a9e4bd7290c5f12dea04fb4159cb3de01ec8f1",
    "figure2": "34061e935751a323b4a30ef9de00e49548a253d542617bb306d74db076bce644",
    "intervals": "82f9dc48bba716516599d9867f955c0b23cb45186896c5ff6516356449c001ad",
    "mean": "977ff92dc261d2d8da1a79e35d508f206329efc8e200d78555ef98d6148cb871",
    "mode": "67ecf9aca2c928e6904f99c21d280d5e8476fc8c1f3d1bee92386760a74fe8ae",
    "multi_quantiles": "a47cc11297c14834cff1042c40431067210b071db875f063c8bc4b2ae70fe552",
    "multi_quantiles_add_remove": (
        "1f2a461540e5835348b4ee72de6d8d33b8b7b7fa80059c98d59a0b1ada9d54e6"
    ),
    "multi_quantiles_peers": ("2bff4295ca095b48d59588e2c721a963c06d173c74f0748215ff8356fa1d4528"),
    "peers": "8d29f99d0c983ab73ddeb8103de6984788f46c796c8eacf9e980da4a91053a34",
    "ptr": "d115836cb530bd6c10a552fff03ff0eb979a0cbca041b11486423938419b86e9",
    "quantiles": "3ab7ef556398030885c2b520ebccb54b18e083d0163c480b6f0eed456889c313",
    # issue 27 added five m-quantile methods' cells (the 225 earlier cells kept their numbers)
    "regression": "7a919deac54cee54e690650f05fb943a2a0ab4e0ca9eef2dfce1bef943cb1aa7",
    "smoke": "436034e035d1054fd051e589984a71f81648a19bd39ec194f34948ef1b166b84",
    "trimmed_mean_hypothesis": "0fd4fd8fa9d28cf8dec16e74a4d52a4491d462a4abdc6be3d94db2f1376e03af",
}
BASE = "_base"
"""conf/experiment/_base.yaml: what the experiments share; not an experiment itself."""
GROUPS = {"datasets": "dataset", "statistics": "statistic", "mechanisms": "mechanism"}
EXPERIMENTS = sorted(
    p.stem for p in (CONF_DIR / "experiment").glob("*.yaml") if not p.stem.startswith("_")
)
VERTEBRAL = f"{VertebralColumn.__module__}.{VertebralColumn.__qualname__}"


def composed(*overrides: str) -> dict[str, Any]:
    """conf/config.yaml composed with ``overrides``, interpolations unresolved."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=False)


def experiment_file(name: str) -> dict[str, Any]:
    """What ``conf/experiment/<name>.yaml`` itself writes (its defaults list included)."""
    return OmegaConf.to_container(OmegaConf.load(CONF_DIR / "experiment" / f"{name}.yaml"))


def parent(name: str) -> str:
    """The one config an experiment extends: the first entry of its defaults list."""
    defaults = experiment_file(name).get("defaults")
    assert isinstance(defaults, list) and len(defaults) == 2 and defaults[1] == "_self_", (
        f"experiment {name}: its defaults list must be [{BASE} or an experiment, _self_], "
        f"got {defaults!r}"
    )
    return defaults[0]


def repeated(written: object, inherited: object, path: str = "") -> Iterator[str]:
    """Paths of the values of ``written`` equal to the ones at the same place of
    ``inherited`` (mappings are compared key by key, as they are merged)."""
    if isinstance(written, Mapping) and isinstance(inherited, Mapping):
        for key, value in written.items():
            if key in inherited:
                yield from repeated(value, inherited[key], f"{path}.{key}" if path else key)
    elif written == inherited:
        yield path or "the whole entry"


def uses_vertebral_data(cfg: Mapping[str, Any]) -> bool:
    entries = [load_entry(CONF_DIR, "dataset", ref) for ref in cfg["datasets"]]
    return any(entry.get("_target_") == VERTEBRAL for entry in entries)


def test_every_experiment_has_a_recorded_hash() -> None:
    assert sorted(CONFIG_HASHES) == EXPERIMENTS


def test_the_gate_baseline_has_the_regression_hash() -> None:
    with BASELINE.open(newline="", encoding="utf-8") as file:
        hashes = {row["config_hash"] for row in csv.DictReader(file)}
    assert hashes == {CONFIG_HASHES["regression"]}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_to_its_recorded_plan(name: str) -> None:
    cfg = composed(f"experiment={name}")
    assert cfg["name"] == name
    if uses_vertebral_data(cfg) and locate_vertebral() is None:
        pytest.skip("vertebral data unavailable (no column_2C.dat; this test never downloads)")
    plan = build_plan(cfg, conf_dir=CONF_DIR)
    assert plan.config_hash == CONFIG_HASHES[name]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_states_only_what_it_changes(name: str) -> None:
    base = parent(name)
    assert base == BASE or base in EXPERIMENTS, f"experiment {name} extends {base!r}"
    inherited = composed(f"experiment={base}")
    own = {key: value for key, value in experiment_file(name).items() if key != "defaults"}
    same = [key for key in own if key in inherited and own[key] == inherited[key]]
    assert not same, f"experiment {name} repeats {same} of {base} / conf/config.yaml"


def test_the_base_states_only_what_config_yaml_does_not() -> None:
    config_alone = composed("~experiment")
    own = experiment_file(BASE)
    assert "defaults" not in own and "name" not in own and "mechanisms" not in own
    same = [key for key in own if key in config_alone and own[key] == config_alone[key]]
    assert not same, f"{BASE}.yaml repeats {same} of conf/config.yaml"


def inline_entries() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(experiment, group, mapping) of every entry an experiment file writes inline."""
    for name in EXPERIMENTS:
        own = experiment_file(name)
        for key, group in GROUPS.items():
            for ref in own.get(key) or []:
                if isinstance(ref, Mapping):
                    yield name, group, dict(ref)


def test_inline_entries_do_not_restate_what_they_extend() -> None:
    """An entry with the name or label of the one it extends states only what it adds; a
    variant with a name of its own may write its options in full (what its name says, e.g.
    the Zipf grid of mode.yaml), nothing else it inherits."""
    problems = []
    for name, group, entry in inline_entries():
        if "extends" in entry:
            key = "label" if group == "mechanism" else "name"
            base = load_entry(CONF_DIR, group, entry["extends"])
            variant = entry[key] != base[key]
            written = {
                field: value
                for field, value in entry.items()
                if field not in ("extends", key) and not (variant and field == "options")
            }
            problems += [f"{name}: {entry} repeats {path}" for path in repeated(written, base)]
    for group in GROUPS.values():
        for stem in group_names(CONF_DIR, group):
            path = CONF_DIR / group / f"{stem}.yaml"
            entry = OmegaConf.to_container(OmegaConf.load(path))
            if "extends" in entry:
                base = load_entry(CONF_DIR, group, entry.pop("extends"))
                problems += [f"{path.name} repeats {p}" for p in repeated(entry, base)]
    assert not problems


def test_no_entry_is_defined_inline_twice_or_instead_of_its_file() -> None:
    """An entry used by two experiments is a file of conf/<group>/, named in both."""
    where: dict[str, list[str]] = {}
    for name, group, entry in inline_entries():
        key = "label" if group == "mechanism" else "name"
        resolved = load_entry(CONF_DIR, group, entry)
        if resolved[key] in group_names(CONF_DIR, group):
            named = load_entry(CONF_DIR, group, resolved[key])
            assert resolved != named, f"{name}: write {resolved[key]!r} by name, not inline"
        text = json.dumps({"group": group, **resolved}, sort_keys=True)
        where.setdefault(text, []).append(name)
    twice = {text: names for text, names in where.items() if len(names) > 1}
    assert not twice, f"entries written inline in several experiments: {twice}"
