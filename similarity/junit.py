"""The meter's account as a JUnit XML report (``preimage score --junit FILE``), the
format every CI system shows as test results: one test case per compared target,
failed when its gated score is below the bar, the failure naming every differing
field; identity mappings and the per-class scores are the case's properties."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from preimage.similarity.render import SCORE_COLUMNS, report_lines
from preimage.similarity.report import SimilarityReport

__all__ = ["junit_xml"]


def junit_xml(
    suite: str,
    per_target: list[tuple[str, SimilarityReport]],
    *,
    on: str = "restorable",
    minimum: float | None = None,
) -> str:
    """A ``<testsuites>`` document: suite ``suite``, one ``<testcase>`` per target.

    A case fails when its ``on`` score is below ``minimum`` (an ``n/a`` score passes:
    nothing of that class could be lost); without ``minimum`` every case passes and the
    report carries the scores only.
    """
    root = ET.Element("testsuites")
    failures = 0
    cases = []
    for target, report in per_target:
        case = ET.Element("testcase", classname=f"preimage.score.{on}", name=target)
        props = ET.SubElement(case, "properties")
        for column in SCORE_COLUMNS:
            ET.SubElement(props, "property", name=column, value=report.score_of(column).text())
        for m in report.mapped:
            ET.SubElement(props, "property", name=f"mapped {m.what}", value=f"{m.old} → {m.new}")
        value = report.value(on)
        if minimum is not None and value is not None and value < minimum:
            failures += 1
            fail = ET.SubElement(
                case, "failure", type="FidelityBelowBar",
                message=f"{on} {value:.4f} is below {minimum} ({len(report.differences)} "
                        "difference(s))",
            )
            fail.text = "\n".join(report_lines(report, len(report.differences)))
        cases.append(case)
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(failures), errors="0", skipped="0")
    ts.extend(cases)
    root.set("tests", str(len(cases)))
    root.set("failures", str(failures))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
