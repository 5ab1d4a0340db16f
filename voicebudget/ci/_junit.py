"""JUnit XML, as Jenkins, GitLab and GitHub's test-report actions read it.

The elements and attributes are those of the JUnit schema of Jenkins' xunit plugin (``junit-10.xsd``,
github.com/jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd,
read 2026-12-02): ``testsuites`` > ``testsuite`` (``name``, ``tests``, ``failures``, ``errors``, ``skipped``,
``file``; ``properties``) > ``testcase`` (``name``, ``classname``) > ``failure`` / ``error`` / ``skipped``
(``message``, ``type``, the text) or ``system-out``. No ``file``/``line`` on a test case (pytest writes them only
for its legacy ``xunit1`` family; the schema has none): a verdict's file line is in its text and in the GitHub
annotations. Written with the standard library's ElementTree, which escapes the text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from voicebudget.ci._cases import Case, Suite

__all__ = ["FAILURE_TYPE", "junit_xml"]

FAILURE_TYPE = {"failed": "voicebudget.BudgetVerdict", "error": "voicebudget.NotJudged"}
"""The ``type`` attribute of a failure (over budget, a regression, a missed prediction) and of an error (not
comparable: could not be judged)."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry, even escaped (control characters): dropped."""


def _text(s: str) -> str:
    return _NOT_XML.sub("", s)


def junit_xml(suites: Sequence[Suite], name: str) -> str:
    """The JUnit XML document of ``suites`` (UTF-8, with its declaration).

    :param name: the ``testsuites`` name (``voicebudget run``).
    """
    totals = _totals(name, [c for s in suites for c in s.cases])
    del totals["skipped"]  # not an attribute of testsuites in the schema
    root = ET.Element("testsuites", totals)
    for suite in suites:
        attrs = _totals(suite.name, list(suite.cases))
        if suite.file:
            attrs["file"] = _text(suite.file)
        el = ET.SubElement(root, "testsuite", attrs)
        if suite.properties:
            props = ET.SubElement(el, "properties")
            for key, value in suite.properties:
                ET.SubElement(props, "property", {"name": _text(key), "value": _text(value)})
        for case in suite.cases:
            _case(el, case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _totals(name: str, cases: list[Case]) -> dict[str, str]:
    return {
        "name": _text(name),
        "tests": str(len(cases)),
        "failures": str(sum(c.outcome == "failed" for c in cases)),
        "errors": str(sum(c.outcome == "error" for c in cases)),
        "skipped": str(sum(c.outcome == "skipped" for c in cases)),
        "time": "0",
    }


def _case(parent: ET.Element, case: Case) -> None:
    el = ET.SubElement(parent, "testcase", {"name": _text(case.name), "classname": _text(case.classname), "time": "0"})
    where = ""
    if case.location is not None:
        line = f":{case.location.line}" if case.location.line else ""
        where = f"\n(at {case.location.file}{line})"
    if case.outcome in FAILURE_TYPE:
        kind = "failure" if case.outcome == "failed" else "error"
        child = ET.SubElement(el, kind, {"message": _text(case.message), "type": FAILURE_TYPE[case.outcome]})
        child.text = _text(case.details + where)
    elif case.outcome == "skipped":
        ET.SubElement(el, "skipped", {"message": _text(case.message)})
    elif case.details:
        ET.SubElement(el, "system-out").text = _text(case.details)
