"""The splicing editor: one changed line per target, everything else byte-for-byte."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.executor import ExecutorError, SchedulerFile, UnsafeXMLError, format_value
from amtuner.model import GLOBAL_TARGET

DATA = Path(__file__).resolve().parents[1] / "data" / "executor"
SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"
FAIR = (DATA / "fair-scheduler.xml").read_bytes()
CAPACITY = (DATA / "capacity-scheduler.xml").read_bytes()


def changed_lines(old: bytes, new: bytes) -> tuple[list[bytes], list[bytes]]:
    """(removed, added) lines between two byte strings, without context."""
    removed: list[bytes] = []
    added: list[bytes] = []
    diff = difflib.diff_bytes(
        difflib.unified_diff, old.splitlines(True), new.splitlines(True), b"a", b"b", n=0
    )
    for line in diff:
        if line.startswith((b"---", b"+++", b"@@")):
            continue
        (removed if line.startswith(b"-") else added).append(line[1:])
    return removed, added


def load(tmp_path: Path, data: bytes, kind: str, name: str = "sched.xml") -> SchedulerFile:
    path = tmp_path / name
    path.write_bytes(data)
    return SchedulerFile.read(path, kind)


def test_format_value_is_minimal() -> None:
    assert format_value(0.35000000001) == "0.35"
    assert format_value(0.5) == "0.5"
    assert format_value(1) == "1.0"
    assert format_value(0.05) == "0.05"
    assert format_value(0.123456) == "0.1235"


# --- FairScheduler ---------------------------------------------------------------------------


def test_fair_values_and_fallbacks(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    assert sf.current_value("root.default") == 0.5
    assert sf.current_value("default") == 0.5
    assert sf.current_value("root.etl.daily") is None
    assert sf.current_value(GLOBAL_TARGET) is None
    assert sf.effective_value("root.etl.daily") == 0.5  # built-in queueMaxAMShareDefault


def test_fair_replace_is_one_line(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    edit = sf.edit({"root.default": 0.35})
    assert edit.changed
    assert edit.targets == {"root.default": (0.5, 0.35)}
    assert changed_lines(FAIR, edit.new_data) == (
        [b"      <maxAMShare>0.50</maxAMShare>\n"],
        [b"      <maxAMShare>0.35</maxAMShare>\n"],
    )
    assert "-      <maxAMShare>0.50</maxAMShare>" in edit.diff
    assert "+      <maxAMShare>0.35</maxAMShare>" in edit.diff


def test_fair_same_value_keeps_spelling(tmp_path: Path) -> None:
    edit = load(tmp_path, FAIR, "fair").edit({"root.default": 0.5})
    assert not edit.changed
    assert edit.new_data == FAIR
    assert edit.diff == ""


def test_fair_creates_element_in_pool_with_sibling_indent(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    edit = sf.edit({"root.etl.daily": 0.2})
    assert changed_lines(FAIR, edit.new_data) == ([], [b"        <maxAMShare>0.2</maxAMShare>\n"])
    after = SchedulerFile(sf.path, "fair", edit.new_data)
    assert after.current_value("etl.daily") == 0.2
    assert edit.new_data.index(b"<maxAMShare>0.2") < edit.new_data.index(b"</pool>")


def test_fair_global_default(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    edit = sf.edit({GLOBAL_TARGET: 0.3})
    assert changed_lines(FAIR, edit.new_data) == (
        [],
        [b"  <queueMaxAMShareDefault>0.3</queueMaxAMShareDefault>\n"],
    )
    after = SchedulerFile(sf.path, "fair", edit.new_data)
    assert after.effective_value("root.etl.daily") == 0.3  # falls back to the new default
    assert after.effective_value("root.default") == 0.5  # its own value wins


def test_fair_self_closing_queue_is_opened(tmp_path: Path) -> None:
    edit = load(tmp_path, FAIR, "fair").edit({"root.etl.adhoc": 0.4})
    removed, added = changed_lines(FAIR, edit.new_data)
    assert removed == [b"      <queue name='adhoc'/>\n"]
    assert added == [
        b"      <queue name='adhoc'>\n",
        b"        <maxAMShare>0.4</maxAMShare>\n",
        b"      </queue>\n",
    ]


def test_fair_several_targets_one_line_each(tmp_path: Path) -> None:
    edit = load(tmp_path, FAIR, "fair").edit(
        {"root.default": 0.45, "root.etl.daily": 0.15, GLOBAL_TARGET: 0.6}
    )
    removed, added = changed_lines(FAIR, edit.new_data)
    assert len(removed) == 1
    assert len(added) == 3


def test_fair_unknown_queue_is_an_error(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    with pytest.raises(ExecutorError, match=r"root\.etl\.nightly.*not declared"):
        sf.edit({"root.etl.nightly": 0.3})
    with pytest.raises(ExecutorError, match="nope"):
        sf.current_value("nope")


def test_fair_without_root_queue_and_crlf(tmp_path: Path) -> None:
    text = (
        b'<?xml version="1.0"?>\r\n<allocations>\r\n\t<queue name="a">\r\n'
        b"\t\t<weight>1</weight>\r\n\t</queue>\r\n</allocations>\r\n"
    )
    sf = load(tmp_path, text, "fair")
    edit = sf.edit({"root.a": 0.25, GLOBAL_TARGET: 0.7})
    removed, added = changed_lines(text, edit.new_data)
    assert removed == []
    assert added == [
        b"\t\t<maxAMShare>0.25</maxAMShare>\r\n",
        b"\t<queueMaxAMShareDefault>0.7</queueMaxAMShareDefault>\r\n",
    ]
    assert edit.new_data.count(b"\n") == edit.new_data.count(b"\r\n")


def test_parent_queues_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match=r"'root\.etl' is a parent queue"):
        load(tmp_path, FAIR, "fair").edit({"root.etl": 0.3})
    with pytest.raises(ExecutorError, match=r"'root\.prod' is a parent queue"):
        load(tmp_path, CAPACITY, "capacity", "cs.xml").edit({"prod": 0.3})


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        (
            "capacity",
            b"<configuration/>",
            b"<configuration>\n  <property>\n"
            b"    <name>yarn.scheduler.capacity.maximum-am-resource-percent</name>\n"
            b"    <value>0.3</value>\n  </property>\n  <property>\n"
            b"    <name>yarn.scheduler.capacity.root.default.maximum-am-resource-percent</name>\n"
            b"    <value>0.2</value>\n  </property>\n</configuration>",
        ),
        (
            "fair",
            b'<allocations><queue name="default"></queue></allocations>',
            b'<allocations><queue name="default"><maxAMShare>0.2</maxAMShare></queue>'
            b"<queueMaxAMShareDefault>0.3</queueMaxAMShareDefault></allocations>",
        ),
    ],
)
def test_degenerate_layouts(tmp_path: Path, kind: str, data: bytes, expected: bytes) -> None:
    edit = load(tmp_path, data, kind).edit({GLOBAL_TARGET: 0.3, "default": 0.2})
    assert edit.new_data == expected


def test_duplicate_targets_naming_one_queue_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="same queue"):
        load(tmp_path, FAIR, "fair").edit({"default": 0.3, "root.default": 0.4})


def test_values_out_of_range_are_refused(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR, "fair")
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ExecutorError, match="not in"):
            sf.edit({"root.default": bad})
    with pytest.raises(ExecutorError, match="written as 0"):
        sf.edit({"root.default": 0.00001})  # 0 would stop every AM from starting


def test_wrong_root_for_kind(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="<configuration>"):
        load(tmp_path, FAIR, "capacity")


def test_non_numeric_value_is_reported(tmp_path: Path) -> None:
    sf = load(tmp_path, FAIR.replace(b"0.50", b"half"), "fair")
    with pytest.raises(ExecutorError, match="'half'"):
        sf.current_value("root.default")


# --- CapacityScheduler -----------------------------------------------------------------------


def test_capacity_values_and_fallbacks(tmp_path: Path) -> None:
    sf = load(tmp_path, CAPACITY, "capacity")
    assert sf.current_value(GLOBAL_TARGET) == 0.1
    assert sf.current_value("root.prod.etl") == 0.25
    assert sf.current_value("root.default") is None
    assert sf.effective_value("root.default") == 0.1
    bare = load(tmp_path, b"<configuration/>", "capacity", "bare.xml")
    assert bare.effective_value("default") == 0.1  # root.queues defaults to "default"


@pytest.mark.parametrize(
    ("calculator", "counted"),
    [
        (None, False),
        ("org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator", False),
        (" org.apache.hadoop.yarn.util.resource.DominantResourceCalculator ", True),
    ],
)
def test_capacity_counts_vcores_only_with_another_calculator(
    tmp_path: Path, calculator: str | None, counted: bool
) -> None:
    prop = (
        b""
        if calculator is None
        else b"<property><name>yarn.scheduler.capacity.resource-calculator</name>"
        b"<value>" + calculator.encode() + b"</value></property>"
    )
    sf = load(tmp_path, b"<configuration>" + prop + b"</configuration>", "capacity")
    assert sf.schedules_vcores is counted
    assert load(tmp_path, b"<allocations/>", "fair", "fair.xml").schedules_vcores


def test_capacity_replace_keeps_whitespace_and_everything_else(tmp_path: Path) -> None:
    edit = load(tmp_path, CAPACITY, "capacity").edit({GLOBAL_TARGET: 0.2, "prod.etl": 0.3})
    assert changed_lines(CAPACITY, edit.new_data) == (
        [b"    <value>0.1</value>\n", b"    <value> 0.25 </value>\n"],
        [b"    <value>0.2</value>\n", b"    <value> 0.3 </value>\n"],
    )
    assert edit.new_data.startswith(CAPACITY[: CAPACITY.index(b"<configuration>")])


def test_capacity_adds_property_block(tmp_path: Path) -> None:
    sf = load(tmp_path, CAPACITY, "capacity")
    edit = sf.edit({"root.default": 0.4})
    removed, added = changed_lines(CAPACITY, edit.new_data)
    assert removed == []
    assert added == [
        b"  <property>\n",
        b"    <name>yarn.scheduler.capacity.root.default.maximum-am-resource-percent</name>\n",
        b"    <value>0.4</value>\n",
        b"  </property>\n",
    ]
    last_property = CAPACITY.rindex(b"</property>")
    assert edit.new_data.index(b"root.default.maximum-am") > last_property
    assert edit.new_data.index(b"root.default.maximum-am") < edit.new_data.index(b"<!-- end")
    assert SchedulerFile(sf.path, "capacity", edit.new_data).current_value("default") == 0.4


def test_a_partition_target_is_the_leafs_share_in_that_partition(tmp_path: Path) -> None:
    """``leaf@label`` is ``<leaf>.accessible-node-labels.<label>.maximum-am-resource-percent``:
    unset, the RM applies the leaf's own, else the global one
    (``getMaximumAMResourcePercentPerPartition``); amtuner adds it as it adds a leaf's."""
    sf = load(tmp_path, CAPACITY, "capacity")
    assert sf.current_value("root.prod.etl@core") is None
    assert sf.effective_value("root.prod.etl@core") == 0.25  # the leaf's
    assert sf.effective_value("root.default@core") == 0.1  # the global one
    edit = sf.edit({"root.prod.etl@core": 0.4})
    key = b"yarn.scheduler.capacity.root.prod.etl.accessible-node-labels.core." + (
        b"maximum-am-resource-percent"
    )
    assert changed_lines(CAPACITY, edit.new_data) == (
        [],
        [b"  <property>\n", b"    <name>" + key + b"</name>\n", b"    <value>0.4</value>\n",
         b"  </property>\n"],
    )  # fmt: skip
    after = SchedulerFile(sf.path, "capacity", edit.new_data)
    assert after.current_value("prod.etl@core") == 0.4
    assert after.effective_value("root.prod.etl") == 0.25  # the leaf's own stays
    with pytest.raises(ExecutorError, match="same queue"):
        sf.edit({"root.prod.etl@core": 0.4, "prod.etl@core": 0.5})
    with pytest.raises(ExecutorError, match=r"root\.prod\.ml"):
        sf.edit({"root.prod.ml@core": 0.3})
    with pytest.raises(ExecutorError, match="no node-label partitions"):
        load(tmp_path, FAIR, "fair", "fair.xml").edit({"root.default@core": 0.3})


def test_capacity_unknown_queue_is_an_error(tmp_path: Path) -> None:
    sf = load(tmp_path, CAPACITY, "capacity")
    with pytest.raises(ExecutorError, match=r"root\.prod\.ml.*root\.prod\.queues"):
        sf.edit({"root.prod.ml": 0.3})
    with pytest.raises(ExecutorError, match=r"root\.default\.x"):
        sf.edit({"root.default.x": 0.3})


def test_latin1_file_keeps_its_bytes(tmp_path: Path) -> None:
    text = (
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        "<!-- Réglages de la file d'attente -->\n<configuration>\n  <property>\n"
        "    <name>yarn.scheduler.capacity.maximum-am-resource-percent</name>\n"
        "    <value>0.1</value>\n    <description>Pourcentage max. (défaut 10 %)</description>\n"
        "  </property>\n</configuration>\n"
    ).encode("latin-1")
    edit = load(tmp_path, text, "capacity").edit({GLOBAL_TARGET: 0.15})
    assert changed_lines(text, edit.new_data) == (
        [b"    <value>0.1</value>\n"],
        [b"    <value>0.15</value>\n"],
    )
    assert "défaut" in edit.diff or "+    <value>0.15</value>" in edit.diff


def test_utf8_bom_and_comment_inside_value(tmp_path: Path) -> None:
    text = (
        b"\xef\xbb\xbf<configuration><property>"
        b"<name>yarn.scheduler.capacity.maximum-am-resource-percent</name>"
        b"<value>0.1<!-- tuned --></value></property></configuration>"
    )
    edit = load(tmp_path, text, "capacity").edit({GLOBAL_TARGET: 0.2})
    assert edit.new_data == text.replace(b"0.1<!-- tuned -->", b"0.2<!-- tuned -->")


# --- Hardening -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prolog",
    [
        b'<!DOCTYPE allocations [<!ENTITY a "0.9">]>',
        b'<!DOCTYPE allocations SYSTEM "http://example.invalid/x.dtd">',
        b'<!DOCTYPE allocations [<!ENTITY lol "lol"><!ENTITY l2 "&lol;&lol;&lol;&lol;">]>',
        b'<!DOCTYPE allocations [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    ],
)
def test_doctype_and_entities_are_refused(tmp_path: Path, prolog: bytes) -> None:
    data = b'<?xml version="1.0"?>\n' + prolog + b"\n<allocations></allocations>\n"
    with pytest.raises(UnsafeXMLError, match="DOCTYPE"):
        load(tmp_path, data, "fair")


def test_undefined_entity_and_garbage_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="not well-formed"):
        load(tmp_path, b"<allocations>&x;</allocations>", "fair")
    with pytest.raises(ExecutorError, match="not well-formed"):
        load(tmp_path, b"<allocations><queue></allocations>", "fair")


def test_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.xml"
    with path.open("wb") as f:
        f.truncate(11 * 1024 * 1024)
    with pytest.raises(ExecutorError, match="larger than"):
        SchedulerFile.read(path, "fair")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="cannot read"):
        SchedulerFile.read(tmp_path / "absent.xml", "fair")


# --- The project's shared samples ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "target"),
    [("fair-scheduler.xml", "fair", "sls_queue_2"), ("capacity-scheduler.xml", "capacity", "")],
)
def test_shared_sls_samples_edit_in_one_line_per_target(
    tmp_path: Path, name: str, kind: str, target: str
) -> None:
    path = SHARED / "fixtures" / "sls" / name
    original = path.read_bytes()
    sf = SchedulerFile(tmp_path / name, kind, original)
    first = sf.edit({target: 0.3})
    second = SchedulerFile(sf.path, kind, first.new_data).edit({target: 0.35})
    assert first.changed
    assert changed_lines(first.new_data, second.new_data) == (
        [line for line in first.new_data.splitlines(True) if b">0.3<" in line],
        [
            line.replace(b">0.3<", b">0.35<")
            for line in first.new_data.splitlines(True)
            if b">0.3<" in line
        ],
    )


@given(
    values=st.lists(st.just(0.0) | st.floats(0.0001, 1.0), min_size=1, max_size=4),
    crlf=st.booleans(),
    kind=st.sampled_from(["fair", "capacity"]),
)
def test_any_value_sequence_changes_one_line_per_target(
    values: list[float], crlf: bool, kind: str
) -> None:
    data = FAIR if kind == "fair" else CAPACITY
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    targets = ["root.default", GLOBAL_TARGET] if kind == "fair" else ["root.prod.etl", ""]
    current = SchedulerFile(Path("f.xml"), kind, data)
    for value in values:
        edit = current.edit(dict.fromkeys(targets, value))
        removed, added = changed_lines(current.data, edit.new_data)
        assert len(removed) <= len(targets)
        assert len(added) - len(removed) in (0, 1, 4)  # replaced, or element/property created
        assert edit.new_data.count(b"\n") == edit.new_data.count(b"\r\n") or not crlf
        current = SchedulerFile(Path("f.xml"), kind, edit.new_data)
        for target in targets:
            assert current.current_value(target) == float(format_value(value))
    assert current.data.replace(b"\r\n", b"\n").count(b"<!--") == data.count(b"<!--")
