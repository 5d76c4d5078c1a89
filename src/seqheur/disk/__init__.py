"""Disk side of seqheur: profiles (measured or modelled), the disk-time model, the raw bench.

* :mod:`.profile` — :class:`DiskProfile` JSON (schema version), bundled-profile registry.
* :mod:`.model` — :class:`DiskModel`: disk reads -> service seconds (numba).
* :mod:`.datasheets` — how the modelled ``ide-7200`` / ``scsi-10k`` profiles were made.
* :mod:`.bench` — the read-only raw-device bench that writes measured profiles.
* :mod:`.check` — :func:`check_model`: a profile's drive model against a real device (demerit).
"""

from typing import Any

from .profile import DiskProfile, DriveCache, load_profile, registered_profiles

__all__ = ["DiskProfile", "DriveCache", "check_model", "load_profile", "registered_profiles"]


def __getattr__(name: str) -> Any:
    # check_model pulls in the bench and the numba model: loaded on first use, so that
    # importing seqheur.disk.profile (every CLI verb that names a profile) stays light
    if name == "check_model":
        from .check import check_model

        return check_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
