"""The layering the code keeps, enforced: pure policies, a simulator core that knows nothing of
the loop it is used to test, and a monitor and an executor that never reach into each other.
Read from the source (every import, at module level or inside a function), so a lazy import
cannot slip past."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "amtuner"

LOOP = ("amtuner.cycle", "amtuner.daemon", "amtuner.commands", "amtuner.cli", "amtuner.demo")
SIM_HARNESS = ("amtuner.sim.control", "amtuner.sim.cli")
"""The simulator's modules that run amtuner's own loop against it (the rest is its core)."""

RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        "amtuner.controller",
        (),
        ("amtuner.monitor", "amtuner.executor", "amtuner.sim", "requests", *LOOP),
        "a policy is a pure function of values: it reads no RM and writes no file",
    ),
    ("amtuner.monitor", (), ("amtuner.executor", *LOOP), "reading the RM never writes"),
    ("amtuner.executor", (), ("amtuner.monitor", *LOOP), "writing never reads the RM's figures"),
    (
        "amtuner.sim",
        SIM_HARNESS,
        ("amtuner.controller", "amtuner.monitor", "amtuner.executor", "amtuner.guard", *LOOP),
        "the simulated RM is tested by the loop, so it must not contain it",
    ),
    ("amtuner.model", (), ("amtuner.",), "the values every layer shares depend on nothing"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix if prefix.endswith(".") else prefix + ".")


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("layer, exempt, forbidden, why", RULES, ids=[r[0] for r in RULES])
def test_layer_imports_nothing_above_it(
    layer: str, exempt: tuple[str, ...], forbidden: tuple[str, ...], why: str
) -> None:
    broken = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if within(name, layer) and not any(within(name, e) for e in exempt)
        for target in sorted(imports(path))
        if any(within(target, f) for f in forbidden)
    ]
    assert not broken, f"{why}: " + "; ".join(broken)


def test_the_rules_see_the_modules() -> None:
    """A rule whose layer matches no module would pass forever."""
    for layer, *_ in RULES:
        assert any(within(name, layer) for name in MODULES), layer


MAX_LINES = 600
"""A module past this wants to be a package divided along its seams (complexity per function is
ruff's McCabe check, configured in pyproject.toml)."""


def test_no_module_exceeds_600_lines() -> None:
    sizes = {name: len(p.read_text(encoding="utf-8").splitlines()) for name, p in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_readme_stays_an_operators_page() -> None:
    """Research and results live in docs/; the README is what an operator reads first."""
    readme = PACKAGE.parent / "README.md"
    assert len(readme.read_bytes()) <= 12 * 1024


BENCHMARK_QUOTE = re.compile(
    r"\b[01]\.\d{3}\b"  # a ratio to a best or default value: 1.172, 0.966 -> 1.005
    r"|\b[01]\.\d\d\s*[-–]\s*[01]\.\d\d\b"  # a range of them: 1.10-1.12
    r"|of the best fixed"
    r"|\(\d+ seeds|\d+ seeds\)"  # (10 seeds): a measurement's protocol
    r"|\d s against (?:the best )?\d"  # 222.7-228.2 s against 210.1
    r"|makespan \d"  # makespan 165 / 162 s
)
"""What a benchmark's result looks like in prose. Constants (FULL 0.95, T2 0.5, Hadoop's
defaults) have one or two decimals and no protocol, so they do not match."""


def prose(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring (module, class, function, attribute) and comment."""
    for node in ast.walk(ast.parse(source)):
        value = node.value if isinstance(node, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            yield node.lineno, value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def benchmark_quotes(source: str) -> list[str]:
    return [
        f"{line}: ...{text[max(0, m.start() - 40) : m.end() + 20]}..."
        for line, text in prose(source)
        for m in BENCHMARK_QUOTE.finditer(text)
    ]


def test_no_docstring_or_comment_quotes_a_benchmark() -> None:
    """A docstring says why a rule or constant exists, from YARN's semantics or control theory;
    what a benchmark measured lives in docs/, once, where a re-run updates it. A docstring that
    needs the measurement points to the section of docs/ that has it."""
    quoted = {
        name: found
        for name, path in MODULES.items()
        if (found := benchmark_quotes(path.read_text(encoding="utf-8")))
    }
    assert quoted == {}


def test_the_benchmark_check_tells_a_measurement_from_a_constant() -> None:
    """The check above would pass forever on a pattern that matches nothing."""
    measured = (
        '"""Measured on 120 one-map jobs (10 seeds): 1.172 of the best fixed value."""',
        'X = 1\n"""The phase-changing workload 0.966 -> 1.005."""',
        'def f() -> None:\n    """took 1.10-1.12 of its makespan."""',
        "# every schedule gives 222.7-228.2 s against the best 210.1",
        "# best fixed A: 0.8 (makespan 165 / 162 s)",
    )
    for source in measured:
        assert benchmark_quotes(source), source
    constants = (
        '"""At or above this share the target is full."""\nFULL = 0.95',
        '"""T2 0.5, A_min 0.05; the RM reads 0.15 back as 0.150000006; Hadoop 0.20 slots."""',
        '# keep the operator\'s spelling ("0.50"); 10 seeds leave noise; 5-15 s after the write',
        '"""(measured: docs/policies.md, "A batch of small jobs")"""',
    )
    for source in constants:
        assert not benchmark_quotes(source), source
