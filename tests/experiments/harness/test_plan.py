"""Config → plan: name resolution, checks, seeds, config hash, and the shipped configs."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
from harness_mechanisms import CONF_DIR, GAUSSIAN, LAPLACE, tiny_overrides
from omegaconf import OmegaConf

import mechanisms
from experiments.base.seeding import data_rng, noise_rng, seed_sequence, stable_int
from experiments.harness.conf_files import group_names, load_entry
from experiments.harness.plan import ConfigError, build_plan, mechanism_entry

PAPER_EPSILONS = [0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
SMOKE_LABELS = [
    "duff",
    "quantile_em",
    "smooth_cauchy",
    "smooth_laplace_oracle",
    "laplace_ln_oracle",
    "smooth_laplace_public",
    "laplace_ln_public",
]
FIGURE1_LABELS = [*SMOKE_LABELS, "laplace_ln_matched_oracle"]


def tiny(**keys: object) -> dict:
    config = {
        "seed": 3,
        "n": 11,
        "replicates": 2,
        "trials": 4,
        "epsilons": [1.0, 0.5],
        "datasets": ["normal", "uniform"],
        "mechanisms": [LAPLACE, GAUSSIAN],
    }
    return {**config, **keys}


# ---------------------------------------------------------------- shipped configs


def test_figure1_is_the_paper_setting(compose_config) -> None:
    cfg = compose_config([])
    assert cfg.name == "figure1"
    assert (cfg.n, cfg.replicates, cfg.trials) == (1000, 100, 100)
    assert list(cfg.epsilons) == PAPER_EPSILONS
    assert cfg.delta == "1/n"
    assert list(cfg.datasets) == ["normal", "uniform", "beta"]
    assert list(cfg.mechanisms) == FIGURE1_LABELS
    assert cfg.keep_estimates is False
    for label, tuning in [
        ("smooth_laplace_oracle", "oracle"),
        ("laplace_ln_oracle", "oracle"),
        ("smooth_laplace_public", "public"),
        ("laplace_ln_public", "public"),
    ]:
        entry = load_entry(CONF_DIR, "mechanism", label)
        assert entry["options"] == {"tuning": tuning}
        assert entry["name"] == label.removesuffix(f"_{tuning}")
        assert mechanism_entry(entry).takes_delta is True


def test_smoke_is_tiny(compose_config) -> None:
    cfg = compose_config(["experiment=smoke"])
    assert (cfg.n, cfg.replicates, cfg.trials, len(cfg.epsilons)) == (101, 3, 5, 2)
    assert list(cfg.mechanisms) == SMOKE_LABELS


def test_overrides_reach_the_config(compose_config) -> None:
    cfg = compose_config(tiny_overrides(seed=9, epsilons="[0.5,1]", n_jobs=2))
    assert (cfg.seed, list(cfg.epsilons), cfg.n_jobs, cfg.n) == (9, [0.5, 1], 2, 21)


@pytest.mark.parametrize("name", ["normal", "uniform", "beta"])
def test_synthetic_dataset_files(name: str) -> None:
    entry = load_entry(CONF_DIR, "dataset", name)
    assert (
        entry["_target_"] == "experiments.data.datasets.SyntheticDataset" and entry["name"] == name
    )
    assert entry["options"]["bounds"] == ([-10.0, 10.0] if name == "normal" else [0.0, 1.0])


def test_every_mechanism_file_matches_the_registry() -> None:
    """Each conf/mechanism entry names a registered mechanism that accepts its options."""
    labels = group_names(CONF_DIR, "mechanism")
    assert set(FIGURE1_LABELS) <= set(labels)
    for label in labels:
        entry = mechanism_entry(load_entry(CONF_DIR, "mechanism", label))  # imports _target_
        assert mechanisms.get(entry.name).requires_delta == entry.takes_delta, label
        delta = 1e-3 if entry.takes_delta else None
        try:
            epsilon = 0.5 if entry.cls.requires_epsilon else None  # a non-private reference
            made = mechanisms.make(entry.name, epsilon=epsilon, delta=delta, **entry.options)
        except ImportError as err:  # a peer adapter without the extra installed
            assert '".[peers]"' in str(err), label
            continue
        assert made.guarantee.epsilon > 0


def test_mechanism_labels_never_contradict_the_class() -> None:
    """A label tells the truth about privacy: a non-private variant (parameters tuned on the
    private data) says ``oracle``, a private one never does, and a label equal to a class's
    registry name means that class with its default options (stated or not)."""
    for label in group_names(CONF_DIR, "mechanism"):
        entry = mechanism_entry(load_entry(CONF_DIR, "mechanism", label))
        delta = 1e-3 if entry.takes_delta else None
        try:
            guarantee = entry.configure(0.5, delta).guarantee
        except ImportError:  # a peer adapter without the extra installed
            continue
        assert ("oracle" in label.split("_")) == guarantee.data_dependent_tuning, label
        assert ("nonprivate" in label.split("_")) == math.isinf(guarantee.epsilon), label
        if label == entry.name:
            defaults = inspect.signature(entry.cls).parameters
            for option, value in entry.options.items():
                assert value == defaults[option].default, (label, option)


# ------------------------------------------------------------------ resolution


def test_names_resolve_to_group_files_and_inline_entries() -> None:
    plan = build_plan(tiny(mechanisms=["duff", LAPLACE]))
    assert [m.label for m in plan.mechanisms] == ["duff", "lap"]
    assert plan.mechanisms[0].module == "mechanisms.median.duff"
    assert plan.mechanisms[1].module == "harness_mechanisms"
    assert [d.id for d in plan.datasets] == ["normal", "uniform"]
    assert plan.datasets[1].bounds == (0.0, 1.0)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            {"datasets": ["normall"]},
            "unknown dataset 'normall'; valid names: beta, cauchy_line, cps_wages,",
        ),
        (
            {"mechanisms": ["duf"]},
            "unknown mechanism 'duf'; valid names: .*duff, duff_replace_one, gaussian_global",
        ),
        (
            {"mechanisms": ["smooth_laplace"]},
            "'smooth_laplace' is a mechanism class without an entry of that name; its "
            "entries: smooth_laplace_oracle, smooth_laplace_public",
        ),
        ({"mechanisms": [{"name": "duff"}]}, "inline mechanism entry needs a 'label'"),
        ({"mechanisms": [LAPLACE, LAPLACE]}, "duplicate entries lap"),
        ({"mechanisms": [{"label": "x", "name": "nope"}]}, "unknown mechanism 'nope'"),
        ({"mechanisms": [{**LAPLACE, "takes_delta": True}]}, "requires_delta = False"),
        ({"mechanisms": [{**GAUSSIAN, "takes_delta": False}]}, "requires_delta = True"),
        ({"mechanisms": [{**LAPLACE, "option": 1}]}, "unknown fields option"),
        (
            {"mechanisms": [{**LAPLACE, "options": {"clipp": False}}]},
            "'lap': 'harness_laplace' with options {'clipp': False} cannot be made at any "
            "epsilon of the sweep: ValueError: options: 'harness_laplace' does not take clipp",
        ),
        (
            {
                "mechanisms": [
                    {
                        "label": "g",
                        "name": "gaussian_global",
                        "takes_delta": True,
                        "options": {"calibration": "classical"},
                    }
                ],
                "epsilons": [1.0, 2.0],
            },
            "cannot be made at any epsilon of the sweep: ValueError: epsilon",
        ),
        ({"mechanisms": [{"label": "a/b", "name": "duff"}]}, "letters, digits"),
        ({"mechanisms": []}, "mechanisms must not be empty"),
        ({"datasets": "normal"}, "datasets must be a list"),
        ({"epsilons": [0.5, 0.5]}, "epsilons: duplicate"),
        ({"epsilons": [0.0]}, "epsilons must be a finite number > 0"),
        ({"epsilons": ["big"]}, "epsilons must be a finite number > 0"),
        ({"trials": 0}, "trials must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"delta": 1.5}, "delta must be '1/n' or a number in \\(0, 1\\)"),
        ({"n": 1}, "delta: delta must be in \\(0, 1\\); got 1.0 for n = 1"),
        ({"keep_estimates": "yes"}, "keep_estimates must be true or false"),
        ({"plugins": ["no_such_module_here"]}, "plugins: cannot import"),
    ],
)
def test_config_errors_name_the_key(keys: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_plan(tiny(**keys))


def test_group_file_label_must_match_its_name(tmp_path: Path) -> None:
    (tmp_path / "mechanism").mkdir()
    (tmp_path / "mechanism" / "copy.yaml").write_text("label: duff\nname: duff\n")
    with pytest.raises(ConfigError, match="label 'duff' must equal the file name 'copy'"):
        load_entry(tmp_path, "mechanism", "copy")
    (tmp_path / "mechanism" / "mine.yaml").write_text("name: duff\n")
    assert load_entry(tmp_path, "mechanism", "mine") == {"name": "duff", "label": "mine"}


# ------------------------------------------------------------------ plan & hash


def test_a_mechanism_failing_at_some_epsilons_is_not_a_config_error() -> None:
    entry = {"label": "g", "name": "gaussian_global", "takes_delta": True}
    entry["options"] = {"calibration": "classical"}  # needs epsilon < 1
    plan = build_plan(tiny(mechanisms=[entry], epsilons=[0.5, 2.0]))
    assert plan.mechanisms[0].options == {"calibration": "classical"}


def test_units_and_delta() -> None:
    plan = build_plan(tiny())
    units = plan.units()
    assert len(units) == 2 * 2 * 2
    assert [(u.dataset.id, u.replicate, u.mechanism.label) for u in units[:3]] == [
        ("normal", 0, "lap"),
        ("normal", 0, "gauss"),
        ("normal", 1, "lap"),
    ]
    assert plan.settings.delta_for(1000) == 1e-3
    assert build_plan(tiny(delta=0.01)).settings.delta_for(1000) == 0.01


def test_hash_covers_exactly_what_determines_numbers() -> None:
    base = build_plan(tiny()).config_hash
    for unrelated in ({"n_jobs": 2}, {"results_dir": "elsewhere"}, {"name": "other"}):
        assert build_plan(tiny(**unrelated)).config_hash == base
    changes = [
        {"seed": 4},
        {"n": 12},
        {"replicates": 3},
        {"trials": 5},
        {"epsilons": [1.0]},
        {"delta": 0.01},
        {"keep_estimates": True},
        {"datasets": ["normal"]},
        {"mechanisms": [LAPLACE]},
        {"mechanisms": [{**LAPLACE, "options": {"clip": False}}, GAUSSIAN]},
    ]
    hashes = {build_plan(tiny(**change)).config_hash for change in changes}
    assert base not in hashes and len(hashes) == len(changes)


def test_composed_and_plain_configs_give_the_same_plan(compose_config) -> None:
    cfg = compose_config(tiny_overrides(), [LAPLACE, GAUSSIAN])
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert build_plan(cfg).config_hash == build_plan(plain).config_hash


# ----------------------------------------------------------------------- seeding


def test_stable_int_is_fixed_forever() -> None:
    """Changing these values would silently change every number of every sweep."""
    assert stable_int("normal") == 0x3C815BFB62B7D020
    assert stable_int(0.1) == stable_int(float.fromhex("0x1.999999999999ap-4"))
    assert stable_int(1) == 1 and stable_int(1.0) != stable_int(1)
    assert data_rng(2020, "normal", 0).integers(1 << 30) == 977972116


def test_streams_are_distinct_and_order_free() -> None:
    draws = {
        key: np.random.default_rng(seed_sequence(1, *key)).random()
        for key in [("data", "normal", 0), ("data", "normal", 1), ("data", "uniform", 0)]
    }
    assert len(set(draws.values())) == 3
    a = noise_rng(1, "normal", 0, "duff", 0.5).random(3)
    _ = noise_rng(1, "normal", 0, "duff", 1.0).random(3)
    np.testing.assert_array_equal(a, noise_rng(1, "normal", 0, "duff", 0.5).random(3))
    assert (
        noise_rng(1, "normal", 0, "duff", 0.5).random()
        != noise_rng(1, "normal", 0, "x", 0.5).random()
    )


@pytest.mark.parametrize("bad", [-1, True, 1.5, "1"])
def test_seed_must_be_a_natural_number(bad: object) -> None:
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        seed_sequence(bad, "data")  # type: ignore[arg-type]
