"""The run summary: per case, mean and standard deviation over its rounds; JSON, Markdown and a text table."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from case_runners.results.record import RECORD_NAME

SUMMARY_SCHEMA = "perfplay.run_summary/1"
VALID_STATUSES = ("success", "not_converged")  # a missed target is a valid result, not a failure
STAT_KEYS = ("p_whole", "p_train", "p_core", "e2e_time", "init_time", "final_metric")
COLUMNS = (("case", "case_id"), ("rounds", "rounds"), ("ok", "ok"), ("status", "status"),
           ("p_whole", "p_whole"), ("p_train", "p_train"), ("p_core", "p_core"), ("e2e s", "e2e_time"),
           ("metric", "final_metric"), ("target", "target"), ("MFU", "mfu"))


def mean_std(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values)}


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(run_dir.glob(f"*/round*/{RECORD_NAME}")):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return records


def summarize_records(records: list[dict[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    cases: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: (r["case_id"], r["round"])):
        entry = cases.setdefault(record["case_id"], {
            "case_id": record["case_id"], "case": record["case"], "vendor": record["vendor"],
            "hardware": record["hardware"], "nnodes": record["nnodes"], "nproc": record["nproc"],
            "metric": record["metrics"].get("metric"), "target": record["metrics"].get("target"),
            "rounds": [], "_values": {k: [] for k in STAT_KEYS}, "_mfu": []})
        metrics = record["metrics"]
        entry["rounds"].append({"round": record["round"], "status": record["status"], "reason": record["reason"],
                                **{k: metrics.get(k) for k in STAT_KEYS + ("converged",)}})
        if record["status"] in ("success", "not_converged"):
            for key in STAT_KEYS:
                if isinstance(metrics.get(key), (int, float)):
                    entry["_values"][key].append(float(metrics[key]))
            if record.get("mfu", {}).get("value") is not None:
                entry["_mfu"].append(record["mfu"]["value"])
    summary_cases = []
    for entry in cases.values():
        values, mfu_values = entry.pop("_values"), entry.pop("_mfu")
        statuses = [r["status"] for r in entry["rounds"]]
        entry["stats"] = {key: mean_std(values[key]) for key in STAT_KEYS}
        entry["stats"]["mfu"] = mean_std(mfu_values)
        entry["succeeded"] = statuses.count("success")
        entry["converged"] = sum(1 for r in entry["rounds"] if r.get("converged"))
        entry["status"] = "success" if set(statuses) == {"success"} else \
            ",".join(sorted(set(statuses)))
        summary_cases.append(entry)
    failed = [f"{c['case_id']} round {r['round']}: {r['status']}: {r['reason']}"
              for c in summary_cases for r in c["rounds"] if r["status"] not in VALID_STATUSES]
    return {"schema": SUMMARY_SCHEMA, "run_id": run_id, "cases": summary_cases,
            "ok": all(c["status"] == "success" for c in summary_cases) and bool(summary_cases),
            "failed_rounds": failed}


def summarize_run(run_dir: Path) -> dict[str, Any]:
    summary = summarize_records(load_records(run_dir), run_dir.name)
    summary["run_dir"] = str(run_dir)
    return summary


def _fmt(stat: dict[str, Any] | None, digits: int = 1, percent: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    scale = 100.0 if percent else 1.0
    text = f"{stat['mean'] * scale:.{digits}f}"
    if stat.get("n", 0) > 1:
        text += f" ±{stat['std'] * scale:.{digits}f}"
    return text + ("%" if percent else "")


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for case in summary["cases"]:
        s = case["stats"]
        rows.append([case["case_id"], str(len(case["rounds"])), f"{case['succeeded']}/{len(case['rounds'])}",
                     case["status"], _fmt(s["p_whole"]), _fmt(s["p_train"]), _fmt(s["p_core"]),
                     _fmt(s["e2e_time"]), _fmt(s["final_metric"], 4),
                     "-" if case["target"] is None else f"{case['target']}", _fmt(s["mfu"], 2, percent=True)])
    return rows


def render_table(summary: dict[str, Any]) -> str:
    """A plain-text table for the end of the play (throughputs in samples/s, mean ± std over rounds)."""
    header = [name for name, _ in COLUMNS]
    rows = table_rows(summary)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    title = f"perfplay summary: {summary.get('run_id')} (throughput in samples/s, mean ± std over rounds)"
    failures = [f"  {c['case_id']} round {r['round']}: {r['status']}: {r['reason']}"
                for c in summary["cases"] for r in c["rounds"] if r["status"] != "success"]
    return "\n".join([title, line, "-" * len(line), *body] + (["failures:", *failures] if failures else []))


def render_markdown(summary: dict[str, Any]) -> str:
    header = [name for name, _ in COLUMNS]
    lines = [f"# perfplay run {summary.get('run_id')}", "",
             "Throughputs in samples/s; mean ± std over rounds. MFU on p_core; FLOPs convention: "
             "1 multiply-add = 2 FLOPs.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summary)]
    for case in summary["cases"]:
        lines += ["", f"## {case['case_id']}", "", "| round | status | p_whole | p_train | p_core | e2e s | "
                  f"{case['metric']} | reason |", "|---|---|---|---|---|---|---|---|"]
        for r in case["rounds"]:
            cells = [_num(r.get(k)) for k in ("p_whole", "p_train", "p_core", "e2e_time")]
            lines.append(f"| {r['round']} | {r['status']} | " + " | ".join(cells) +
                         f" | {_num(r.get('final_metric'), 4)} | {r['reason'] or ''} |")
    return "\n".join(lines) + "\n"


def _num(value: Any, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def write_run_summary(run_dir: Path) -> dict[str, Any]:
    """Write summary.json and summary.md into the run directory and return the summary."""
    run_dir = Path(run_dir)
    summary = summarize_run(run_dir)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (run_dir / "summary.md").write_text(render_markdown(summary), encoding="utf-8")
    return summary
