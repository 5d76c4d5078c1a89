"""Disk side of seqheur: profiles (measured or modelled), the disk-time model, the raw bench.

* :mod:`.profile` — :class:`DiskProfile` JSON (schema version), bundled-profile registry.
* :mod:`.model` — :class:`DiskModel`: disk reads -> service seconds (numba).
* :mod:`.datasheets` — how the modelled ``ide-7200`` / ``scsi-10k`` profiles were made.
* :mod:`.bench` — the read-only raw-device bench that writes measured profiles.
"""

from .profile import DiskProfile, DriveCache, load_profile, registered_profiles

__all__ = ["DiskProfile", "DriveCache", "load_profile", "registered_profiles"]
