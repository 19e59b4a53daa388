"""Profile phase of a run archive (spec 6, docs/evidence-format.md ``profile/``).

Per run record: the figures from its ``metric_rows`` (:func:`verify.arith.counters.per_sequence`)
and from the raw CSV re-parsed (:func:`protocol.ncu.parse_raw_csv`); the ncu command
audited; every entry of its ``files`` map equal to the manifest's hashes of that member;
its fixture record (named by ``files.fixture_record``) on the same device and scope; the
stored ``.ncu-rep`` re-read through ``ncu_report`` and cross-checked with the CSV
(:func:`verify.arith.counters.report_agreement`), a report not stored being UNAVAILABLE with
the recorded reason. ``profiles.json.gz``: order, per-repeat figures, mean and SD
(:func:`verify.arith.counters.repeat_summary`), versions against ``capabilities.json.gz``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from protocol import ncu as counters
from protocol.errors import BundleError
from verify.arith import counters as arith_counters
from verify.checks import profile, run_profile_text
from verify.checks.run_common import compare_fields, json_record
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, passed, unavailable

WORKSPACE_CONFIGS = (":4096:8", ":16:8")
SCOPES = ("task", "training")
SUMMARY_FILES = ("profile/profiles.json.gz", "profile/capabilities.json.gz")


def run_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    """(path, record) of every profile run record (``metric_rows`` + ``files``)."""
    out = []
    for rel in sorted(f.content):
        if (rel.startswith("profile/") and rel.endswith(".json.gz") and not rel.endswith(".fixture.json.gz")
                and rel not in SUMMARY_FILES):
            rec = f.json(rel)
            if isinstance(rec, dict) and "metric_rows" in rec:
                out.append((rel, rec))
    return out


def check_files_map(f: ArchiveFiles, rel: str, rec: dict, subject: str) -> list[CheckResult]:
    """Each ``files`` entry names a verified member with the manifest's hashes (or says why it is not stored)."""
    out: list[CheckResult] = []
    for key, entry in get_dict(rec, "files", rel).items():
        path = get(entry, "path", (str, type(None)), f"{rel}: files.{key}")
        if path is None:
            stored = entry.get("stored")
            out.append(check_true("profile.files.not_stored", f"{subject} {key}", stored is False and bool(entry.get("reason")),
                                  f"files.{key} has no path but does not say stored: false with a reason"))
            if key == "ncu_report" and rec.get("repeat_index") == 0:
                # Both --keep-reports policies (first, all) store repeat 0's report: without it nothing in
                # the archive re-reads this profile's counters.
                out.append(failed("profile.files.first_report_kept", f"{subject} {key}",
                                  "repeat 0 of a profile must keep its .ncu-rep (bundle.phases.profile stores it "
                                  "under every --keep-reports policy); it is missing here"))
            continue
        member = f"profile/{path}"
        manifest = f.stored_entry(member)
        if manifest is None:
            out.append(failed("profile.files.present", f"{subject} {key}", f"{member} named by files.{key} is not a "
                              "verified member of the archive"))
            continue
        want = {k: manifest[k] for k in ("sha256", "content_sha256", "content_size_bytes")}
        out.append(compare_fields("profile.files.hashes", member, entry, want, what=f"files.{key} vs manifest"))
    return out


def not_stored_reason(recorded: object) -> str:
    """The UNAVAILABLE reason for a run whose ``.ncu-rep`` was deliberately not stored.

    Args:
        recorded: the run record's ``files.ncu_report.reason`` (e.g. "not stored to keep the
            archive lean: ..."), or None.

    Returns:
        One line that says the file is absent (so installing ``ncu_report`` does not help) and
        quotes the run's own reason without repeating "not stored".
    """
    note = str(recorded or "no reason recorded").strip()
    for prefix in ("report not stored", "not stored"):
        if note.lower().startswith(prefix):
            note = note[len(prefix):].lstrip(" :;,-")
            break
    return (f"this repeat's .ncu-rep is not in the archive, so no reader can re-check it here, with or without "
            f"ncu_report installed (the run's note: {note})")


def _check_report(f: ArchiveFiles, rel: str, rec: dict, rows: counters.CounterRows, subject: str) -> CheckResult:
    entry = get_dict(rec, "files.ncu_report", rel) if "ncu_report" in get_dict(rec, "files", rel) else None
    if entry is None:
        return failed("profile.ncu_report", subject, "files.ncu_report is absent: the run does not account for its report")
    if entry.get("path") is None:
        return unavailable("profile.ncu_report", subject, not_stored_reason(entry.get("reason")),
                           recorded=entry.get("content_sha256"))
    read = f.background.result(rel) if f.background is not None else None
    if read is None:
        return unavailable("profile.ncu_report", subject, "the stored report was not read (no background reader)")
    if read["status"] == "unavailable":
        return unavailable("profile.ncu_report", subject, str(read["reason"]))
    if read["status"] != "read":
        return failed("profile.ncu_report", subject, str(read["reason"]))
    try:
        metrics = arith_counters.report_agreement(rows, read)
    except BundleError as exc:
        return failed("profile.ncu_report", subject, str(exc), recomputed=read.get("values"))
    recorded = get(rec, "ncu_report_cross_check.metrics", (dict, type(None)), rel) \
        if "metrics" in get_dict(rec, "ncu_report_cross_check", rel) else None
    if recorded is not None and {k: v.get("report_value") for k, v in recorded.items()} != \
            {k: v["report_value"] for k, v in metrics.items()}:
        return failed("profile.ncu_report", subject, "the report's values differ from the run's recorded "
                      "ncu_report_cross_check", recorded=recorded, recomputed=metrics)
    return passed("profile.ncu_report", subject, recomputed=metrics, tolerance="integers exact; floats half a printed digit",
                  reason=f"{len(metrics)} values of the .ncu-rep equal the CSV ({read.get('seconds', 0):.1f} s to read)")


def check_run(f: ArchiveFiles, rel: str, rec: dict) -> tuple[list[CheckResult], dict | None]:
    """All checks of one run record; returns (verdicts, recomputed figures or None)."""
    ws = get_str(rec, "workspace_config", rel)
    scope = get_str(rec, "scope", rel)
    subject = f"{rel} {ws}"
    out = profile.check_profile_figures(rec, scope=scope, subject=subject, where=rel, hit_rate_max_percent=None)
    figures = arith_counters.per_sequence(get_dict(rec, "metric_rows", rel), counters.SEQUENCES_IN_RANGE[scope], scope)
    out.append(compare_fields("profile.figures", subject, rec, figures, what="per-sequence figures (spec 6.3)"))
    out.append(check_equal("profile.hit_rate_flag", subject, get(rec, "l2_sector_hit_rate_above_100_percent", bool, rel),
                           figures["l2_sector_hit_rate_percent"] > counters.HIT_RATE_MAX_PERCENT,
                           what="l2_sector_hit_rate_above_100_percent vs the hit rate (kept up to "
                                f"{counters.HIT_RATE_REFUSE_PERCENT:g} %, flagged above {counters.HIT_RATE_MAX_PERCENT:g} %)"))
    out.append(check_equal("profile.command", subject, counters.audit_profile_command(get_list(rec, "command", rel)), [],
                           what="problems of the ncu command line"))
    out.append(check_equal("profile.env_workspace", subject, get(rec, "env.CUBLAS_WORKSPACE_CONFIG", str, rel), ws,
                           what="CUBLAS_WORKSPACE_CONFIG in the job env"))
    out += check_files_map(f, rel, rec, subject)
    csv_rel = f"profile/{get_str(rec, 'files.csv.path', rel)}"
    if not f.has(csv_rel):
        return out + [failed("profile.csv_present", subject, f"{csv_rel} missing: raw ncu output is required")], None
    csv_text = f.read(csv_rel).decode("utf-8")
    rows = counters.parse_raw_csv(csv_text, hit_rate_limit_percent=None)
    out.append(check_equal("profile.csv_metric_rows", subject, get_dict(rec, "metric_rows", rel), rows.metric_rows(),
                           what="metric rows re-parsed from the raw CSV"))
    out.append(check_equal("profile.device_attributes", subject, get_dict(rec, "profile_device_attributes", rel),
                           rows.device_attributes, what="device attributes re-parsed from the raw CSV"))
    out.append(check_equal("profile.pass_counts", subject, get_list(rec, "pass_counts", rel),
                           counters.replay_pass_counts(rows), what="replay passes"))
    fx_rel = f"profile/{get_str(rec, 'files.fixture_record.path', rel)}"
    fx = json_record(f, fx_rel)
    if fx is None:
        out.append(failed("profile.fixture_record", subject, f"{fx_rel} named by files.fixture_record is absent"))
    else:
        got = {"workspace": fx.get("cublas_workspace_config"), "scope": get(fx, "profile.scope", str, fx_rel),
               "sequences": get(fx, "profile.fresh_training_sequences_in_range", int, fx_rel),
               "gpu": fx.get("gpu"), "l2_cache_bytes": get(fx, "hardware.l2_cache_bytes", int, fx_rel)}
        want = {"workspace": ws, "scope": scope, "sequences": counters.SEQUENCES_IN_RANGE[scope],
                "gpu": rows.display_name, "l2_cache_bytes": rows.l2_cache_size_bytes}
        out.append(check_equal("profile.fixture_record", subject, got, want,
                               what="fixture record (workspace, scope, S, device, L2) vs the run and ncu"))
        out.append(check_equal("profile.l2_cache_size_bytes", subject, get(rec, "l2_cache_size_bytes", int, rel),
                               rows.l2_cache_size_bytes, what="L2 size from ncu"))
    out += run_profile_text.check_output(f, rel, rec, csv_text, fx, counters.replay_pass_counts(rows), subject)
    learner = fx.get("learner") if isinstance(fx, dict) else None
    if scope == "training" and isinstance(learner, dict) and learner.get("kernel_tool") == "cuda":
        out.append(_check_cuda_launch(f, rows, learner, subject))
    out.append(_check_report(f, rel, rec, rows, subject))
    return out, figures


def _check_cuda_launch(f: ArchiveFiles, rows: counters.CounterRows, learner: dict, subject: str) -> CheckResult:
    """The CUDA kernel tool's launch as Nsight Compute saw it (the training range's one ``rev88_train``
    launch: grid, block and cluster size, dynamic shared memory) against the fixture record's learner block
    and the layout its kernel source declares (:func:`verify.checks.run_energy.cuda_launch_problems`,
    :func:`verify.checks.run_energy.archive_layout`)."""
    from verify.checks.run_energy import archive_layout, cuda_launch_problems  # noqa: PLC0415

    layout = archive_layout(f, learner.get("kernel_source_sha256"))[0]
    return check_equal("profile.cuda_launch", subject, cuda_launch_problems(learner, rows.launch, layout), [],
                       what="problems of the learner block's launch shape against the CSV's launch cells")


def check_summary(f: ArchiveFiles, figures: dict[str, tuple]) -> list[CheckResult]:
    """``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.

    Args:
        figures: run record path -> (recomputed figures, workspace config, scope).
    """
    rel = "profile/profiles.json.gz"
    summary = json_record(f, rel)
    if summary is None:
        return [failed("profile.summary", "profile/", "profiles.json.gz absent")] if figures else []
    out: list[CheckResult] = []
    repeats = get_int(summary, "repeats", rel)
    plan = [f"workspace-{ws.strip(':').replace(':', '-')}-{scope}-r{r:02d}"
            for r in range(repeats) for ws in WORKSPACE_CONFIGS for scope in SCOPES]
    out.append(check_equal("profile.summary.order", rel, get_list(summary, "order", rel), plan,
                           what="runs in interleaved order (repeat, workspace, scope)"))
    for key, entry in get_dict(summary, "profiles", rel).items():
        runs = get_list(entry, "runs", rel)
        missing = [r for r in runs if f"profile/{r}.json.gz" not in figures]
        if missing:
            out.append(failed("profile.summary.runs", f"{rel} {key}", f"runs {missing} have no verified record"))
            continue
        reps = [{k: v for k, v in figures[f"profile/{r}.json.gz"][0].items() if k != "counter_unit"} for r in runs]
        out.append(compare_fields("profile.summary.repeats", f"{rel} {key}", {"repeats": get_list(entry, "repeats", rel)},
                                  {"repeats": reps}, what="per-repeat figures from metric rows"))
        first, ws, scope = figures[f"profile/{runs[0]}.json.gz"]
        same = all(figures[f"profile/{r}.json.gz"][1:] == (ws, scope) for r in runs)
        out.append(compare_fields("profile.summary.mean_sd", f"{rel} {key}", entry,
                                  {**arith_counters.repeat_summary(reps),
                                   "workspace_config": ws if same else "<runs of different workspaces>",
                                   "scope": scope, "range_training_sequences": first["range_training_sequences"],
                                   "counter_unit": first["counter_unit"]},
                                  what="mean and sample SD over repeats"))
    caps = json_record(f, "profile/capabilities.json.gz")
    if caps is None:
        return out + [failed("profile.capabilities", rel, "capabilities.json.gz absent")]
    version = counters.parse_ncu_version(get_str(caps, "ncu_version_text", "capabilities"))
    want = {"ncu_version": version, "pinned_ncu_version": counters.PINNED_NCU_VERSION,
            "ncu_version_is_pinned": version == counters.PINNED_NCU_VERSION}
    out.append(compare_fields("profile.ncu_version", rel, summary, want, what="ncu version vs `ncu --version`"))
    out.append(compare_fields("profile.capabilities.ncu_version", "profile/capabilities.json.gz", caps, want,
                              what="ncu version vs `ncu --version`"))
    out += _check_query(f, caps)
    return out


def _check_query(f: ArchiveFiles, caps: dict) -> list[CheckResult]:
    where = "profile/capabilities.json.gz"
    query = get_dict(caps, "metric_query", where)
    texts: dict[str, bytes] = {}
    for stream in ("stdout", "stderr"):
        member = f"profile/{get_str(query, f'files.{stream}.path', where)}"
        if not f.has(member):
            return [failed("profile.metric_query", where, f"{member} absent")]
        texts[stream] = f.read(member)
    # The listing is ~97 MB: no concatenated copy and no decoded text. An ASCII name is in the UTF-8 text
    # (invalid bytes replaced) exactly when its bytes are in the bytes: no multi-byte sequence holds an ASCII byte.
    blob = texts["stdout"] + texts["stderr"] if texts["stderr"] else texts["stdout"]
    names = [m.rsplit(".", 1)[0] for m in counters.NCU_METRICS]
    if all(name.isascii() for name in names):
        missing = [m for m, name in zip(counters.NCU_METRICS, names, strict=True) if name.encode("ascii") not in blob]
    else:
        text = blob.decode("utf-8", errors="replace")
        missing = [m for m, name in zip(counters.NCU_METRICS, names, strict=True) if name not in text]
    # with an empty stderr the hash is stdout's content sha256, which integrity computed from these bytes
    raw_sha = (f.content_sha256(f"profile/{get_str(query, 'files.stdout.path', where)}") if not texts["stderr"]
               else None) or hashlib.sha256(blob).hexdigest()
    return [check_equal("profile.metric_query.raw_sha256", where, get_str(query, "raw_query_sha256", where),
                        raw_sha, what="sha256 of stdout + stderr"),
            check_true("profile.metric_query", where, get(query, "returncode", int, where) == 0 and not missing,
                       f"metric query rc {query.get('returncode')!r}, metrics not listed: {missing}")]


def check_profile_phase(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: every run record, then the summary."""
    out: list[CheckResult] = []
    figures: dict[str, Any] = {}
    for rel, rec in run_records(f):
        verdicts, fig = check_run(f, rel, rec)
        out += verdicts
        if fig is not None:
            figures[rel] = (fig, rec.get("workspace_config"), rec.get("scope"))
    return out + check_summary(f, figures)
