"""CapacityScheduler layouts where Hadoop's ``Configuration`` would not read the value amtuner
edits: refused with the file, the line and the reason, and the file left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from amtuner.executor import SchedulerFile, UnsafeXMLError
from amtuner.model import GLOBAL_TARGET

KEY = "yarn.scheduler.capacity.maximum-am-resource-percent"
QUEUE_KEY = "yarn.scheduler.capacity.root.default.maximum-am-resource-percent"


def _file(tmp_path: Path, body: str, root_attrs: str = "") -> Path:
    path = tmp_path / "capacity-scheduler.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<configuration{root_attrs}>\n{body}</configuration>\n',
        encoding="utf-8",
    )
    return path


def _prop(name: str, value: str, extra: str = "") -> str:
    return (
        f"  <property>\n    <name>{name}</name>\n    <value>{value}</value>{extra}\n"
        "  </property>\n"
    )


def test_plain_file_is_edited(tmp_path: Path) -> None:
    """The control: the same layouts without the refused construct are edited in place."""
    path = _file(tmp_path, _prop(KEY, "0.1", "\n    <final>false</final>"))
    edit = SchedulerFile.read(path, "capacity").edit({GLOBAL_TARGET: 0.3})
    assert b"<value>0.3</value>" in edit.new_data


def test_xinclude_is_refused(tmp_path: Path) -> None:
    (tmp_path / "am.xml").write_text(
        f"<configuration>{_prop(KEY, '0.9')}</configuration>\n", encoding="utf-8"
    )
    path = _file(
        tmp_path,
        _prop(KEY, "0.1") + '  <xi:include href="am.xml"/>\n',
        ' xmlns:xi="http://www.w3.org/2001/XInclude"',
    )
    with pytest.raises(UnsafeXMLError, match=r"scheduler.xml:7: XInclude \(<xi:include>"):
        SchedulerFile.read(path, "capacity")


def test_xinclude_under_another_prefix_is_refused(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        _prop(KEY, "0.1")
        + '  <inc:include xmlns:inc="http://www.w3.org/2001/XInclude" href="x.xml"/>\n',
    )
    with pytest.raises(UnsafeXMLError, match=r":7: XInclude \(<inc:include>\)"):
        SchedulerFile.read(path, "capacity")


@pytest.mark.parametrize("final", ["true", " TRUE "])
def test_final_target_is_refused(tmp_path: Path, final: str) -> None:
    path = _file(tmp_path, _prop(KEY, "0.1", f"\n    <final>{final}</final>"))
    sf = SchedulerFile.read(path, "capacity")
    assert sf.current_value(GLOBAL_TARGET) == 0.1  # reading it is fine: it is what the RM uses
    with pytest.raises(UnsafeXMLError, match=rf"xml:3: {KEY} is final"):
        sf.edit({GLOBAL_TARGET: 0.3})


def test_duplicate_definition_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = _file(tmp_path, _prop(KEY, "0.1") + _prop("other", "x") + _prop(KEY, "0.2"))
    sf = SchedulerFile.read(path, "capacity")
    with pytest.raises(UnsafeXMLError, match=rf"{KEY} is defined 2 times \(lines 3 and 11\)"):
        sf.edit({GLOBAL_TARGET: 0.3})
    with pytest.raises(UnsafeXMLError, match="defined 2 times"):
        sf.current_value(GLOBAL_TARGET)


def test_duplicate_across_element_and_attribute_forms_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, _prop(KEY, "0.1") + f'  <property name="{KEY}" value="0.2"/>\n')
    with pytest.raises(UnsafeXMLError, match=r"lines 3 and 7"):
        SchedulerFile.read(path, "capacity").edit({GLOBAL_TARGET: 0.3})


def test_duplicate_queues_key_is_refused_for_a_queue_target(tmp_path: Path) -> None:
    queues = "yarn.scheduler.capacity.root.queues"
    path = _file(tmp_path, _prop(queues, "default") + _prop(queues, "default,b"))
    with pytest.raises(UnsafeXMLError, match=rf"{queues} is defined 2 times"):
        SchedulerFile.read(path, "capacity").edit({"default": 0.3})


@pytest.mark.parametrize(
    "element",
    [
        f'<property name="{KEY}" value="0.1"/>',
        f'<property name="{KEY}"><value>0.1</value></property>',
        f'<property final="true"><name>{KEY}</name><value>0.1</value></property>',
    ],
)
def test_attribute_form_is_refused(tmp_path: Path, element: str) -> None:
    path = _file(tmp_path, f"  {element}\n")
    with pytest.raises(UnsafeXMLError, match=rf"xml:3: {KEY} is set with attributes"):
        SchedulerFile.read(path, "capacity").edit({GLOBAL_TARGET: 0.3})


def test_attribute_form_of_another_property_does_not_block(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '  <property name="yarn.scheduler.capacity.maximum-applications" value="10"/>\n'
        + _prop(KEY, "0.1"),
    )
    edit = SchedulerFile.read(path, "capacity").edit({GLOBAL_TARGET: 0.3})
    assert b"<value>0.3</value>" in edit.new_data


@pytest.mark.parametrize("outer", ["configuration", "group"])
def test_nested_property_is_refused(tmp_path: Path, outer: str) -> None:
    path = _file(tmp_path, f"  <{outer}>\n{_prop(QUEUE_KEY, '0.9')}  </{outer}>\n")
    with pytest.raises(UnsafeXMLError, match=rf"xml:4: <property> inside <{outer}>"):
        SchedulerFile.read(path, "capacity")


def test_fair_scheduler_files_are_not_checked_for_capacity_layouts(tmp_path: Path) -> None:
    """``AllocationFileLoaderService`` reads no XInclude and no <property>: not our concern."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(
        '<allocations><queue name="default"><maxAMShare>0.5</maxAMShare></queue></allocations>',
        encoding="utf-8",
    )
    assert SchedulerFile.read(path, "fair").current_value("default") == 0.5
