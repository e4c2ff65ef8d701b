"""preimage's pytest plugin: restoration fidelity as a test, for any team's recovery path.

Registered through the ``pytest11`` entry point, so installing preimage is enough.
It imports nothing of preimage until a fixture is used.

Fixtures:

* ``preimage_store`` — a backup store of the test's own, in a temporary directory
  (never the user's default store);
* ``preimage_capture`` — ``preimage_capture("file:///srv/app", "postgresql://…")``
  captures targets into that store and returns the :class:`~preimage.Backup`;
* ``preimage_targets`` / ``preimage_backup`` — declare the targets once, with
  ``@pytest.mark.preimage_targets("file:///srv/app", …)`` or by overriding the
  ``preimage_targets`` fixture (it may use ``tmp_path``), and ``preimage_backup``
  is their capture, taken before the test body runs;
* ``preimage_gate`` — :func:`assert_restored` bound to the test's store.

:func:`assert_restored` scores a target (its live state, anywhere) or another backup
against a backup with a bar per fidelity class, and fails naming every field that
differs.  The default bar is ``restorable=1.0`` (content and metadata all back);
``--preimage-bar "content=1.0 metadata=0.99"`` or the ``preimage_bar`` ini option set
another for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from preimage.engine.backups import Backup
    from preimage.similarity import SimilarityReport
    from preimage.store.store import Store

__all__ = ["FidelityGateError", "assert_restored", "parse_bar"]

DEFAULT_BAR = {"restorable": 1.0}


class FidelityGateError(AssertionError):
    """A restored target scored below the bar; the message names every differing field."""

    def __init__(self, message: str, report: SimilarityReport) -> None:
        super().__init__(message)
        self.report = report


def parse_bar(text: str) -> dict[str, float]:
    """``"content=1.0 metadata=0.99"`` (or ``"0.99"``: the restorable score) as a bar."""
    text = text.strip()
    if not text:
        return dict(DEFAULT_BAR)
    try:
        if "=" not in text:
            return {"restorable": float(text)}
        return {name.strip(): float(value) for name, value in
                (part.split("=", 1) for part in text.replace(",", " ").split())}
    except ValueError as exc:
        raise pytest.UsageError(
            f"preimage bar {text!r}: write CLASS=MIN pairs such as 'content=1.0 metadata=0.99' "
            "(classes: content, metadata, access, server, restorable, overall)") from exc


def _message(where: str, report: SimilarityReport, failed: list[str]) -> str:
    from preimage.similarity.render import report_lines

    lines = [f"restoration fidelity of {where} is below the bar: {'; '.join(failed)}"]
    lines += [f"  {line}" for line in report_lines(report, len(report.differences))]
    return "\n".join(lines)


def assert_restored(
    backup: str | Backup,
    against: str | None = None,
    *,
    bar: Mapping[str, float] | float | None = None,
    store: Store | None = None,
    only: Sequence[str] = (),
) -> SimilarityReport:
    """Score ``against`` — a target URI (its live state), another backup ID, or, when
    ``None``, the backup's own targets — against ``backup``, and raise
    :class:`FidelityGateError` when a class is below its bar.

    ``bar`` maps classes (``content``, ``metadata``, ``access``, ``server``, or the unions
    ``restorable`` and ``overall``) to a minimum; a float is the ``restorable`` minimum.
    A class with nothing in scope (n/a) passes.  The error lists every differing field
    with its class, the reason, the original and the restored value; identities mapped
    by place are listed as such.  Returns the report when the bar is met.
    """
    import preimage

    ref = backup if isinstance(backup, str) else backup.id
    bars = dict(DEFAULT_BAR) if bar is None else (
        {"restorable": float(bar)} if isinstance(bar, int | float) else dict(bar))
    if against is None:
        total, _ = preimage.score(ref, store=store, only=list(only))
    else:
        total, _ = preimage.score_against(ref, against, store=store, only=list(only))
    failed = []
    for name, minimum in bars.items():
        value = total.value(name)
        if value is not None and value < minimum:
            failed.append(f"{name} {value:.4f} < {minimum}")
    if failed:
        raise FidelityGateError(_message(against or f"backup {ref}'s targets", total, failed),
                                total)
    return total


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--preimage-bar`` and the ``preimage_bar`` ini option."""
    group = parser.getgroup("preimage", "restoration fidelity gates")
    group.addoption("--preimage-bar", default=None, metavar="BAR",
                    help="minimum score per class for preimage_gate, e.g. "
                         "'content=1.0 metadata=0.99' (default: restorable=1.0)")
    parser.addini("preimage_bar", "minimum score per class for preimage_gate", default="")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``preimage_targets`` marker."""
    config.addinivalue_line(
        "markers", "preimage_targets(*uris): targets the preimage_backup fixture captures "
                   "before the test body")


@pytest.fixture
def preimage_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A backup store of this test's own (never the user's default store)."""
    from preimage.store.store import Store

    st = Store(tmp_path_factory.mktemp("preimage-store"))
    yield st
    st.close()


@pytest.fixture
def preimage_capture(preimage_store: Store) -> Callable[..., Backup]:
    """``preimage_capture(*uris, label="")``: capture targets into the test's store."""
    import preimage

    def capture(*uris: str, label: str = "") -> Backup:
        return preimage.capture(list(uris), store=preimage_store, label=label)

    return capture


@pytest.fixture
def preimage_targets(request: pytest.FixtureRequest) -> list[str]:
    """The targets ``preimage_backup`` captures: the ``preimage_targets`` marker's URIs
    (override this fixture to build them from other fixtures)."""
    marker = request.node.get_closest_marker("preimage_targets")
    if marker is None or not marker.args:
        raise pytest.UsageError(
            "preimage_backup needs targets: mark the test with "
            "@pytest.mark.preimage_targets('file:///…') or override the preimage_targets fixture")
    return [str(a) for a in marker.args]


@pytest.fixture
def preimage_backup(preimage_targets: list[str], preimage_capture: Callable[..., Backup]) -> Backup:
    """The declared targets, captured before the test body runs."""
    return preimage_capture(*preimage_targets)


@pytest.fixture
def preimage_gate(preimage_store: Store, pytestconfig: pytest.Config) -> Callable[..., Any]:
    """:func:`assert_restored` on the test's store, with the run's bar as default."""
    text = pytestconfig.getoption("--preimage-bar") or str(pytestconfig.getini("preimage_bar"))
    default = parse_bar(text)

    def gate(backup: str | Backup, against: str | None = None, *,
             bar: Mapping[str, float] | float | None = None,
             only: Sequence[str] = ()) -> SimilarityReport:
        return assert_restored(backup, against, bar=default if bar is None else bar,
                               store=preimage_store, only=only)

    return gate
