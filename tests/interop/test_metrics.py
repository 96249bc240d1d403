"""plimsolld's /metrics read by a real OpenMetrics parser (prometheus-client's),
after real runs through the published client; and the Grafana dashboard and
alerting rules in docs/grafana checked against it: every metric a query names
is one the daemon exports."""

import json
import re
import urllib.request

import plimsoll_client
from plimsoll_client import errors
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import ROOT

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
DASHBOARD = ROOT / "docs" / "grafana" / "plimsoll.json"
ALERTS = ROOT / "docs" / "grafana" / "alerts.yml"

# Series Prometheus makes itself for every target, not exported by anyone.
SYNTHETIC = {"up"}

# PromQL words that are not metric names (functions are told by their "(").
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan"}


def metrics_addr(d):
    for line in d.lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("message") == "metrics listening":
            return ev["addr"]
    raise AssertionError("no metrics listener in the log:\n" + d.log())


def scrape(d):
    with urllib.request.urlopen(f"http://{metrics_addr(d)}/metrics", timeout=30) as r:
        assert r.headers["Content-Type"] == OPENMETRICS
        return r.read().decode()


def families(text):
    """name -> family, parsed strictly (the parser raises on anything that is
    not valid OpenMetrics, a missing # EOF included)."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def exported_names(fams):
    """Every name a query can use: the families' and their samples'."""
    names = set()
    for f in fams.values():
        names.add(f.name)
        names.update(s.name for s in f.samples)
        if f.type == "counter":
            names.add(f.name + "_total")
        if f.type == "histogram":
            names.update(f.name + suffix for suffix in ("_bucket", "_count", "_sum"))
    return names


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    e = re.sub(r"\{[^}]*\}", "", e)  # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)  # range and subquery windows
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\$\w+", "", e)  # Grafana variables
    e = re.sub(r"(?<![\w:])\d+(\.\d+)?([eE][+-]?\d+)?", "", e)  # numbers
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        if e[m.end():].lstrip().startswith("("):
            continue  # a function
        if m.group(0).lower() in KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def dashboard_exprs():
    d = json.loads(DASHBOARD.read_text())
    assert d["schemaVersion"] >= 36 and d["panels"], "a real dashboard"
    exprs = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            exprs.append((p["title"], t["expr"]))
    for v in d["templating"]["list"]:
        q = v.get("query")
        if isinstance(q, dict) and "label_values(" in q["query"]:
            metric = q["query"].split("label_values(", 1)[1].split(",", 1)[0].strip()
            exprs.append((f"variable {v['name']}", metric))
    return exprs


def alert_exprs():
    """(alert, expr) from the rule file, single-line and `|` block exprs alike."""
    out, alert, lines = [], None, ALERTS.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*- alert:\s*(\S+)", line)
        if m:
            alert = m.group(1)
        m = re.match(r"(\s*)expr:\s*(.*)$", line)
        if m:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value in ("|", ">"):
                block = []
                while i + 1 < len(lines) and (not lines[i + 1].strip() or len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                    i += 1
                    block.append(lines[i].strip())
                value = " ".join(block)
            assert alert, f"an expr outside an alert: {line}"
            out.append((alert, value))
        i += 1
    return out


def test_metrics_parse_as_openmetrics_after_real_runs(start_daemon):
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_INSECURE="1", SANDBOX_RATE_PER_MIN="1", SANDBOX_RATE_BURST="4")
    c = plimsoll_client.Client(d.url)
    assert [c.run_javascript("console.log(1)").exit_code for _ in range(3)] == [0, 0, 0]
    assert c.run_javascript("throw new Error('no')").exit_code != 0
    try:
        c.run_javascript("console.log(1)")
        raise AssertionError("the fifth run should be shed by the rate limit")
    except errors.AtCapacityError as e:
        assert e.not_dispatched == "capacity"

    fams = families(scrape(d))

    def one(name, **labels):
        """A counter's total, or a gauge's values, over the samples holding `labels`."""
        f = fams[name]
        values = [s.value for s in f.samples if all(s.labels.get(k) == v for k, v in labels.items())]
        return sum(values) if f.type == "counter" else values

    assert fams["plimsoll_runs"].type == "counter" and one("plimsoll_runs") == 4
    assert one("plimsoll_runs_failed") == 0
    assert one("plimsoll_shed", reason="rate") == 1
    assert one("plimsoll_shed", reason="at_capacity") == 0
    assert fams["plimsoll_inflight"].type == "gauge" and one("plimsoll_inflight") == [0]
    assert one("plimsoll_provider_ready", provider="wasm") == [1]
    assert fams["plimsoll_build_info"].samples[0].labels["provider"] == "wasm"
    assert fams["plimsoll_build_info"].samples[0].labels["isolation"] == "process"

    h = fams["plimsoll_run_duration_seconds"]
    assert h.type == "histogram"
    runs = {}
    for outcome, want in (("ok", 3), ("guest_failed", 1)):
        labels = {"tier": "process", "kind": "snippet", "outcome": outcome}
        mine = [s for s in h.samples if all(s.labels.get(k) == v for k, v in labels.items())]
        count = next(s.value for s in mine if s.name.endswith("_count"))
        total = next(s.value for s in mine if s.name.endswith("_sum"))
        buckets = sorted(((float(s.labels["le"]), s.value) for s in mine if s.name.endswith("_bucket")))
        assert count == want, (outcome, count)
        assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), f"cumulative: {buckets}"
        assert buckets[-1] == (float("inf"), count)
        assert 0 < total < 60
        runs[outcome] = count
    # Only dispatched runs are timed: the shed one is not.
    assert sum(s.value for s in h.samples if s.name.endswith("_count")) == sum(runs.values())

    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds", "process_virtual_memory_bytes"):
        assert name in fams, name
    assert one("process_resident_memory_bytes")[0] > 1e6

    # Nothing the caller sent, and no session id or token, in any label.
    for f in fams.values():
        for s in f.samples:
            for v in s.labels.values():
                assert "console" not in v and "Error" not in v, (s.name, v)


def test_dashboard_and_alerts_name_only_exported_metrics(start_daemon):
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_INSECURE="1")
    plimsoll_client.Client(d.url).run_javascript("console.log(1)")
    exported = exported_names(families(scrape(d))) | SYNTHETIC
    queries = dashboard_exprs() + alert_exprs()
    assert len(alert_exprs()) >= 8, "the alerting rules were read"
    named = set()
    for where, expr in queries:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        missing = names - exported
        assert not missing, f"{where}: {sorted(missing)} not exported by plimsolld ({expr!r})"
        named |= names
    # The dashboard covers what the issue asks for.
    for name in ("plimsoll_run_duration_seconds_bucket", "plimsoll_shed_total", "plimsoll_inflight", "plimsoll_sessions_open",
                 "plimsoll_sessions_suspended", "plimsoll_session_pool_ready", "plimsoll_session_pool_refill_failures_total",
                 "plimsoll_host_calls_total", "plimsoll_provider_ready", "plimsoll_admission_waits_total",
                 "process_resident_memory_bytes", "process_cpu_seconds_total"):
        assert name in named, f"no query over {name}"


def test_the_name_check_catches_a_metric_not_exported():
    exported = {"plimsoll_runs_total", "plimsoll_run_duration_seconds_bucket"}
    expr = 'histogram_quantile(0.99, sum by (le, kind) (rate(plimsoll_run_duration_seconds_bucket{kind="x"}[5m]))) + 1e3'
    assert metric_names(expr) == {"plimsoll_run_duration_seconds_bucket"}
    assert metric_names("sum(rate(plimsoll_runs_totl[$__rate_interval])) > on (instance) plimsoll_x") - exported == {"plimsoll_runs_totl", "plimsoll_x"}


def test_answers_carry_their_phases_and_the_published_client_verifies_them(start_daemon):
    """Every answer carries where its time went (`phases`, plimsoll's addition
    to RunResponse) and its wall identity in the record's policy; the
    published client, which predates both, verifies the answer unchanged, and
    /metrics has the phase histogram."""
    d = start_daemon(SANDBOX_PROVIDER="wasm", PLIMSOLL_INSECURE="1")
    body = json.dumps({"protocol": 4, "javascript": {"code": "console.log(6*7)"}}).encode()
    req = urllib.request.Request(d.url + "/plimsoll.v1.SandboxService/Run", data=body, method="POST")
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        raw = json.loads(r.read())
    phases = [p["phase"] for p in raw["phases"]["phases"]]
    assert phases == ["admitted", "acquired", "started", "running", "collected"], raw["phases"]
    assert raw["phases"]["source"] == "fresh"
    assert all(p["ms"] >= 0 for p in raw["phases"]["phases"])
    assert ";wall=sha256:" in raw["record"]["policy"], raw["record"]

    c = plimsoll_client.Client(d.url)
    r = c.run_javascript("console.log(6*7)")
    assert r.stdout == b"42\n"
    assert ";wall=sha256:" in r.record.policy
    assert c.describe().policy == r.record.policy

    fams = families(scrape(d))
    h = fams["plimsoll_run_phase_seconds"]
    assert h.type == "histogram"
    for phase in phases:
        count = [s.value for s in h.samples
                 if s.name.endswith("_count") and s.labels == {"tier": "process", "phase": phase}]
        assert count == [2], (phase, count)
