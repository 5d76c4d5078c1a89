"""seqheur — evaluate file-server read-ahead heuristics by replaying real NFS traces.

The public API is imported lazily (``seqheur.reads`` loads only what it needs), so that the
CLI starts fast and lower layers never pull in higher ones.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> "module:attribute" (modules relative to this package)
_API: dict[str, str] = {
    # schema and I/O
    "REQUEST_SCHEMA": "schema:REQUEST_SCHEMA",
    "IngestReport": "schema:IngestReport",
    "validate": "schema:validate",
    "file_id_of": "schema:file_id_of",
    "SeqheurError": "errors:SeqheurError",
    "IngestError": "errors:IngestError",
    # ingest
    "read_trace": "ingest:read_trace",
    "read_table": "ingest.generic:read_table",
    "read_csv": "ingest.generic:read_csv",
    "read_pcap": "ingest.pcap:read_pcap",
    "scan_pcap": "ingest.pcap:scan_pcap",
    "read_nfsdump": "ingest.nfsdump:read_nfsdump",
    "scan_nfsdump": "ingest.nfsdump:scan_nfsdump",
    "export_nfsdump": "export:export_nfsdump",
    # streams
    "ReadStream": "streams:ReadStream",
    "reads": "streams:reads",
    "read_stream": "streams:read_stream",
    "trace_stats": "streams:trace_stats",
    # disk profiles and the disk-time model
    "DiskProfile": "disk.profile:DiskProfile",
    "load_profile": "disk.profile:load_profile",
    "registered_profiles": "disk.profile:registered_profiles",
    "DiskModel": "disk.model:DiskModel",
    "DiskLayout": "disk.model:Layout",
    "run_bench": "disk.bench:run_bench",
    "BenchConfig": "disk.bench:BenchConfig",
    "check_model": "disk.check:check_model",
    "plot_profile": "disk.plot:plot_profile",
    # workloads
    "workloads": "workloads",
    # detectors and table models
    "detect": "detect:detect",
    "DetectResult": "detect:DetectResult",
    "detector": "heuristics.registry:detector",
    "register_detector": "heuristics.registry:register_detector",
    "unregister_detector": "heuristics.registry:unregister_detector",
    "registered_detectors": "heuristics.registry:registered_detectors",
    "parse_detector": "heuristics.registry:parse_detector",
    "DetectorSpec": "heuristics.registry:DetectorSpec",
    "parse_table": "tables:parse_table",
    "registered_tables": "tables:registered_tables",
    "register_table": "tables:register_table",
    "unregister_table": "tables:unregister_table",
    "table_lookup": "tables:table_lookup",
    "SpecError": "errors:SpecError",
    # replay and scoring
    "replay": "replay:replay",
    "replay_chunks": "replay:replay_chunks",
    "replay_profiles": "replay:replay_profiles",
    "bound": "bound:bound",
    "tune": "tune:tune",
    "Replayer": "replay:Replayer",
    "ReplayResult": "replay:ReplayResult",
    "parse_policy": "readahead:parse_policy",
    "Policy": "readahead:Policy",
    "register_policy": "readahead:register_policy",
    "registered_policies": "readahead:registered_policies",
    "parse_disk": "disk.registry:parse_disk",
    "register_disk": "disk.registry:register_disk",
    "Registry": "registry:Registry",
    "ReplayConfig": "config:ReplayConfig",
    "METRICS": "metrics:METRICS",
}


def __getattr__(name: str) -> Any:
    target = _API.get(name)
    if target is None:
        raise AttributeError(f"module 'seqheur' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(f".{module_name}", __name__)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_API))
