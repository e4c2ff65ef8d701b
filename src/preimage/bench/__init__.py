"""The regret benchmark: real destructive tool calls, restored and scored.

``preimage bench`` runs declarative scenarios (``scenarios/*.yaml``) against
real systems under several protectors in one run and reports, per scenario
and in total, the regret-moment backup rate, similarity per fidelity class,
capture latency, restore time, bytes stored and model tokens.
"""

from preimage.bench.library import load_scenarios
from preimage.bench.results import BenchReport, NotRun, RunResult, Totals
from preimage.bench.scenario import Scenario, select

__all__ = [
    "BenchReport",
    "NotRun",
    "RunResult",
    "Scenario",
    "Totals",
    "load_scenarios",
    "select",
]
