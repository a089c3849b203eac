"""``extends: NAME`` in config entries (experiments.harness.conf_files.load_entry)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from experiments.harness.conf_files import load_entry
from experiments.harness.config import ConfigError
from experiments.harness.plan import build_plan

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"


def write(directory: Path, group: str, stem: str, text: str) -> None:
    (directory / group).mkdir(parents=True, exist_ok=True)
    (directory / group / f"{stem}.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    write(tmp_path, "mechanism", "base", "label: base\nname: duff\noptions: {a: 1, b: 2}\n")
    write(tmp_path, "mechanism", "child", "extends: base\noptions: {b: 3}\nstatistics: [mean]\n")
    return tmp_path


def test_a_file_extends_another_and_keeps_its_own_label(conf: Path) -> None:
    assert load_entry(conf, "mechanism", "child") == {
        "label": "child",
        "name": "duff",
        "options": {"a": 1, "b": 3},
        "statistics": ["mean"],
    }


def test_an_inline_entry_extends_a_file_and_states_its_own_label(conf: Path) -> None:
    same = {"label": "child", "extends": "child", "statistics": ["median"]}
    assert load_entry(conf, "mechanism", same) == {
        "label": "child",
        "name": "duff",
        "options": {"a": 1, "b": 3},
        "statistics": ["median"],  # a list is replaced, not merged
    }
    mine = load_entry(conf, "mechanism", {"label": "mine", "extends": "base", "options": {"c": 4}})
    assert mine == {"label": "mine", "name": "duff", "options": {"a": 1, "b": 2, "c": 4}}
    with pytest.raises(ConfigError, match="an inline mechanism entry needs a 'label'"):
        load_entry(conf, "mechanism", {"extends": "base"})


def test_changing_the_mechanism_under_its_label_is_refused(conf: Path) -> None:
    with pytest.raises(ConfigError, match="changes options: give it a label of its own"):
        load_entry(conf, "mechanism", {"label": "base", "extends": "base", "options": {"a": 5}})
    with pytest.raises(ConfigError, match="changes name"):
        load_entry(conf, "mechanism", {"label": "base", "extends": "base", "name": "quantile_em"})
    # Restating an inherited value changes nothing, so it is not refused (only redundant).
    same = {"label": "base", "extends": "base", "options": {"a": 1}}
    assert load_entry(conf, "mechanism", same)["options"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("files", "ref", "message"),
    [
        ({"a": "extends: b\n", "b": "extends: a\n"}, "a", "in a cycle: a -> b -> a"),
        ({"a": "extends: a\n"}, "a", "in a cycle: a -> a"),
        ({}, {"label": "x", "extends": "missing"}, "unknown mechanism 'missing'"),
        ({}, {"label": "x", "extends": ["base"]}, "extends must name a mechanism file"),
        ({"a": "label: b\nextends: base\n"}, "a", "label 'b' must equal the file name 'a'"),
    ],
)
def test_bad_extends_are_config_errors(conf: Path, files: dict, ref: object, message: str) -> None:
    for stem, text in files.items():
        write(conf, "mechanism", stem, text)
    with pytest.raises(ConfigError, match=message):
        load_entry(conf, "mechanism", ref)


def test_vertebral_rounded_is_vertebral_rounded() -> None:
    vertebral = load_entry(CONF_DIR, "dataset", "vertebral")
    assert load_entry(CONF_DIR, "dataset", "vertebral_rounded") == {
        **vertebral,
        "name": "vertebral_rounded",
        "options": {**vertebral["options"], "rounded": True},
    }


def test_an_extending_mechanism_entry_builds_the_same_plan_as_written_out() -> None:
    sweep = {
        "seed": 1,
        "n": 11,
        "replicates": 1,
        "trials": 2,
        "epsilons": [1.0],
        "datasets": ["normal"],
        "statistics": ["median", "mean"],
    }
    written_out = {"label": "smooth_laplace_oracle", "name": "smooth_laplace"}
    written_out |= {"options": {"tuning": "oracle"}, "statistics": ["median"]}
    extending = {"label": "smooth_laplace_oracle", "extends": "smooth_laplace_oracle"}
    extending["statistics"] = ["median"]
    plans = [
        build_plan(OmegaConf.create({**sweep, "mechanisms": [entry]}), conf_dir=CONF_DIR)
        for entry in (written_out, extending)
    ]
    assert plans[0].numbers() == plans[1].numbers()
