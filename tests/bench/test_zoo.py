"""`amtuner bench zoo`: its statistics on numbers made by hand, and one small run end to end whose
replay commands give the figures the report was made of."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from amtuner.bench import ZOO_DEVELOPMENT_SEEDS, ZOO_JUDGING_FIRST_SEED
from amtuner.bench import zoo as bz
from amtuner.bench.zoo import CaseResult, Outcome, ZooResult
from amtuner.model import SchedulerKind
from tests.e2e.conftest import amtuner

CAP = SchedulerKind.CAPACITY


def runs(*jcts: float | None) -> list[Outcome]:
    """One outcome per run seed with these mean JCTs (makespan twice the JCT)."""
    return [Outcome(j, None if j is None else 2 * j, 0.01) for j in jcts]


def test_p90_is_the_nearest_rank() -> None:
    assert bz.percentile([float(x) for x in range(1, 11)], 0.9) == 9.0
    assert bz.percentile([3.0, 1.0, 2.0], 0.9) == 3.0
    assert bz.percentile([5.0], 0.9) == 5.0
    assert bz.percentile([float(x) for x in range(1, 21)], 0.9) == 18.0


def test_spread_counts_never_as_the_worst_and_leaves_it_out_of_the_mean() -> None:
    s = bz.spread([1.0, 1.2, 1.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0])
    assert s == {"cases": 10, "never": 0, "mean": 1.13, "p90": 1.2, "worst": 2.0}
    s = bz.spread([1.0, None, 1.5])
    assert s == {"cases": 3, "never": 1, "mean": 1.25, "p90": "never", "worst": "never"}
    # One never in 20 cases is the worst, but not the 90th percentile.
    s = bz.spread([1.0] * 19 + [None])
    assert (s["p90"], s["worst"], s["never"]) == (1.0, "never", 1)
    assert bz.spread([])["mean"] is None


def test_against_the_default_splits_at_two_standard_errors() -> None:
    # Per-seed ratios 1.10, 1.12, 1.11: SE 0.0058, far from 1.
    r, se, verdict = bz.against_default([110.0, 112.0, 111.0], [100.0, 100.0, 100.0])
    assert (r, verdict) == (1.11, "worse")
    assert se == pytest.approx(0.0058, abs=1e-4)
    # Ratios 1.2, 0.9, 1.05: mean 1.05, SE 0.087: within the noise.
    assert bz.against_default([120.0, 90.0, 105.0], [100.0] * 3)[2] == "within"
    assert bz.against_default([90.0, 91.0, 92.0], [100.0] * 3)[2] == "better"
    # Just over and just under 2 SE: ratios 1.01, 1.03 (mean 1.02, SE 0.01) and 1.00, 1.04
    # (mean 1.02, SE 0.02).
    assert bz.against_default([101.0, 103.0], [100.0, 100.0])[2] == "worse"
    assert bz.against_default([100.0, 104.0], [100.0, 100.0])[2] == "within"
    assert bz.against_default([None, 100.0], [100.0, 100.0]) == (None, None, "worse")
    assert bz.against_default([100.0, 100.0], [None, 100.0])[2] == "unjudged"
    assert bz.against_default([150.0], [100.0])[2] == "unjudged"


def test_best_fixed_skips_values_that_never_finished_and_breaks_ties_low() -> None:
    fixed = {0.1: runs(10.0, 13.0), 0.3: runs(9.0, None), 0.5: runs(11.0, 11.0), 0.7: runs(11, 11)}
    assert bz.best_fixed(fixed, lambda o: o.mean_jct_s) == (0.5, 11.0)
    assert bz.best_fixed({0.1: runs(None)}, lambda o: o.mean_jct_s) is None


def test_fine_values_are_the_coarse_best_s_neighbours() -> None:
    c = CaseResult(1, CAP, {"max_sim_seconds": 100.0})
    c.fixed = {a: runs(20.0 + abs(a - 0.4) * 10) for a in bz.COARSE_VALUES}
    assert bz._fine_values(c) == [0.35, 0.45]
    c.fixed = {a: runs(10.0 + a) for a in bz.COARSE_VALUES}
    assert bz._fine_values(c) == [0.05, 0.15]
    c.fixed = {a: runs(10.0 - a) for a in bz.COARSE_VALUES}
    assert bz._fine_values(c) == [0.95]


def _case(seed: int, fixed: dict[float, list[Outcome]], policy: list[Outcome]) -> CaseResult:
    c = CaseResult(seed, CAP, {"max_sim_seconds": 3600.0})
    c.fixed = fixed
    c.policies = {"paper": policy}
    return c


def test_summary_of_hand_made_cases() -> None:
    cases = [
        # Best 0.5 (100 s); default 0.1 at 1.5x; policy 1.2x the best, clearly worse than
        # nothing, clearly better than the default.
        _case(1, {0.1: runs(150.0, 150.0), 0.5: runs(100.0, 100.0)}, runs(118.0, 122.0)),
        # Policy worse than the default on seed 1 only: within the noise; its worst seed is 1.
        _case(2, {0.1: runs(100.0, 100.0), 0.5: runs(110.0, 110.0)}, runs(90.0, 130.0)),
        # Policy never finishes on seed 0: worst of all, worse than the default.
        _case(3, {0.1: runs(100.0, 100.0)}, runs(None, 100.0)),
        # No fixed value finished every seed: not judged.
        _case(4, {0.1: runs(None, 100.0)}, runs(100.0, 100.0)),
    ]
    result = ZooResult(1, 2, ["paper"], "case", cases, 1, 0.5)
    s = bz.summarize(result)
    assert s["judged"] == 3 and s["unjudged"] == ["zoo:4 capacity"]
    default, paper = s["overall"]["default"], s["overall"]["paper"]
    assert default["jct_vs_best"] == {
        "cases": 3, "never": 0, "mean": 1.1667, "p90": 1.5, "worst": 1.5
    }  # fmt: skip
    assert paper["jct_vs_best"] == {
        "cases": 3, "never": 1, "mean": 1.15, "p90": "never", "worst": "never"
    }  # fmt: skip
    assert paper["makespan_vs_best"]["mean"] == 1.15
    assert paper["vs_default"] == {"worse": 1, "within": 1, "better": 1, "unjudged": 0}
    worst = paper["worst"]
    assert [w["case"] for w in worst] == ["zoo:3", "zoo:1", "zoo:2"]
    assert worst[0]["replay"] == (
        "amtuner simulate --workload zoo:3 --scheduler capacity --policy paper --seed 0 "
        "--max-sim-seconds 3600"
    )
    assert worst[2]["replay"].endswith("--policy paper --seed 1 --max-sim-seconds 3600")
    assert worst[2]["best_replay"].endswith("--policy fixed:0.1 --seed 1 --max-sim-seconds 3600")
    text = bz.format_report(s)
    assert "1 / 1 / 1" in text and "zoo:4 capacity" in text
    assert "never" in text.splitlines()[3]
    assert "zoo:3      capacity  never" in text


def test_the_development_range_is_named_in_the_help() -> None:
    run = amtuner("bench", "zoo", "--help")
    assert run.returncode == 0, run.stderr
    help_text = " ".join(run.stdout.split())
    dev = ZOO_DEVELOPMENT_SEEDS
    assert f"{dev.start}-{dev.stop - 1} are for development" in help_text
    assert f"{ZOO_JUDGING_FIRST_SEED}" in help_text


def test_an_unknown_policy_is_refused() -> None:
    run = amtuner("bench", "zoo", "--policies", "adaptive,nonesuch")
    assert run.returncode != 0 and "unknown policy 'nonesuch'" in run.stderr


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("zoo") / "zoo.json"
    run = amtuner(
        "bench", "zoo", "--first-seed", "2", "--cases", "2", "--seeds", "2",
        "--policies", "adaptive,paper", "--workers", "2", "--json", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text()), run.stdout


def test_a_small_run_reports_every_figure(small: tuple[dict, str]) -> None:
    summary, stdout = small
    assert summary["parameters"]["cases"] == 2 and summary["parameters"]["run_seeds"] == 2
    assert [c["seed"] for c in summary["cases"]] == [2, 3]
    assert set(summary["overall"]) == {"default", "adaptive", "paper"}
    for case in summary["cases"]:
        fixed = {float(a) for a in case["fixed_mean_jct_s"]}
        assert set(bz.COARSE_VALUES) <= fixed
        best = case["best_jct_a"]
        neighbours = {round(best - bz.FINE_STEP, 2), round(best + bz.FINE_STEP, 2)}
        assert {a for a in neighbours if 0 < a <= 1} <= fixed
        assert case["best_mean_jct_s"] == min(v for v in case["fixed_mean_jct_s"].values() if v)
        # The default is one of the fixed values; a policy that moves A can beat them all.
        assert case["rows"]["default"]["jct_vs_best"] >= 1.0
        for row in case["rows"].values():
            assert row["jct_vs_best"] > 0
            assert len(row["mean_jct_s_per_seed"]) == 2
    for name in ("adaptive", "paper"):
        entry = summary["overall"][name]
        assert sum(entry["vs_default"].values()) == 2
        assert len(entry["worst"]) == 2
        assert entry["worst"][0]["replay"] in stdout
    assert summary["cost"]["simulations"] == sum(
        2 * (len(c["fixed_mean_jct_s"]) + 2) for c in summary["cases"]
    )
    assert "(development range)" in stdout
    assert stdout.rstrip().endswith("zoo.json")


def test_a_replay_command_gives_the_figure_it_replays(small: tuple[dict, str]) -> None:
    summary, _ = small
    worst = summary["overall"]["adaptive"]["worst"][0]
    case = next(c for c in summary["cases"] if f"zoo:{c['seed']}" == worst["case"])
    for command, per_seed in (
        (worst["replay"], case["rows"]["adaptive"]["mean_jct_s_per_seed"]),
        (worst["best_replay"], case["best_jct_s_per_seed"]),
    ):
        argv = shlex.split(command)
        assert argv[:2] == ["amtuner", "simulate"]
        run = amtuner(*argv[1:], "--json")
        assert run.returncode == 0, run.stderr
        seed = int(argv[argv.index("--seed") + 1])
        assert json.loads(run.stdout)["mean_jct_s"] == per_seed[seed], command


def test_both_schedulers_run_each_case_on_each() -> None:
    result = bz.run_zoo(3, 1, seeds=1, policies=["paper"], workers=1, scheduler="both")
    assert [(c.seed, c.scheduler) for c in result.cases] == [(3, k) for k in SchedulerKind]
    for c in result.cases:
        assert set(bz.COARSE_VALUES) <= set(c.fixed)
        assert [len(r) for r in (*c.fixed.values(), *c.policies.values())] == [1] * (
            len(c.fixed) + 1
        )
    summary = bz.summarize(result)
    assert summary["schedulers"] == {"capacity": 1, "fair": 1}
    assert {c["default_a"] for c in summary["cases"]} == {0.1, 0.5}


def test_the_documented_report_is_the_one_its_json_makes() -> None:
    """docs/zoo.md quotes the report of the run docs/zoo-bench.json recorded, word for word."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    summary = json.loads((docs / "zoo-bench.json").read_text())
    page = (docs / "zoo.md").read_text()
    block = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert block.rstrip() == bz.format_report(summary)
    assert summary["parameters"]["cases"] == 200 and summary["parameters"]["run_seeds"] == 3


def test_the_readme_quotes_the_judging_run() -> None:
    """The README's zoo figures are docs/zoo-judge.json's: mean, p90, the worst case that
    finished and the cases worse than the default, per policy, as recorded."""
    root = Path(__file__).resolve().parents[2]
    summary = json.loads((root / "docs" / "zoo-judge.json").read_text())
    readme = " ".join((root / "README.md").read_text().split())
    for policy, row in summary["overall"].items():
        jct = row["jct_vs_best"]
        worst = max(
            c["rows"][policy]["jct_vs_best"]
            for c in summary["cases"]
            if c["rows"][policy]["jct_vs_best"] is not None
        )
        quoted = f"{jct['mean']:.3f} / {jct['p90']:.3f} / {worst:.3f}"
        if "vs_default" in row:
            quoted += f" ({row['vs_default']['worse']})"
        assert quoted in readme, (policy, quoted)
