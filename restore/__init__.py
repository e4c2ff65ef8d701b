"""Restore policy and reports: conflict modes, scope, per-item outcomes, id remaps,
and relocation into another target.

Imported as ``preimage.restoration`` (the folder is ``restore/``): the name
``preimage.restore`` belongs to the function that restores a backup by ID, so
each name means one thing.
"""

from preimage.restoration.policy import ConflictMode, RestorePolicy
from preimage.restoration.relocation import IdentityMapping, Relocation, rewrite_oracle
from preimage.restoration.report import IdRemap, ItemResult, Outcome, RestoreReport

__all__ = [
    "ConflictMode", "IdRemap", "IdentityMapping", "ItemResult", "Outcome", "Relocation",
    "RestorePolicy", "RestoreReport", "rewrite_oracle",
]
