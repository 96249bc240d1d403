//! `/metrics` on its own listener (`PLIMSOLL_METRICS_ADDR`, loopback by
//! default, no auth): OpenMetrics text, encoded by `prometheus-client` from
//! the core's [`plimsoll_core::metrics::Snapshot`] read once per scrape (a
//! [`Collector`], so nothing is counted twice), plus the standard `process_*`
//! metrics from `/proc/self`. Label values are small fixed sets — never a
//! token, a body, a caller id or a session id. `docs/operations.md` lists
//! every metric; `docs/grafana/plimsoll.json` and `docs/grafana/alerts.yml`
//! query only these names (a test checks).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use plimsoll_core::engine::Engine;
use plimsoll_core::metrics::{HistogramSnapshot, Snapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// The OpenMetrics text type `/metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How long a scrape waits for the provider's readiness check.
const READY_BUDGET: Duration = Duration::from_secs(5);

type Fmt = Result<(), std::fmt::Error>;

/// One metric family being written: its samples, each with a label set.
struct Family<'a> {
    enc: prometheus_client::encoding::MetricEncoder<'a>,
}

impl Family<'_> {
    fn counter(&mut self, labels: &impl EncodeLabelSet, v: u64) -> Fmt {
        self.enc
            .encode_family(labels)?
            .encode_counter::<NoLabelSet, _, f64>(&v, None)
    }

    fn gauge(&mut self, labels: &impl EncodeLabelSet, v: impl GaugeValue) -> Fmt {
        v.put(&mut self.enc.encode_family(labels)?)
    }

    fn histogram(&mut self, labels: &impl EncodeLabelSet, h: &HistogramSnapshot) -> Fmt {
        // prometheus-client takes each bucket's own count and the +Inf bucket.
        let mut below = 0;
        let mut buckets: Vec<(f64, u64)> = h
            .buckets
            .iter()
            .map(|(le, cum)| {
                let own = cum - below;
                below = *cum;
                (*le, own)
            })
            .collect();
        buckets.push((f64::INFINITY, h.count - below));
        self.enc
            .encode_family(labels)?
            .encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &buckets, None)
    }
}

/// A gauge's value: an integer or a float.
trait GaugeValue {
    fn put(self, enc: &mut prometheus_client::encoding::MetricEncoder<'_>) -> Fmt;
}

impl GaugeValue for u64 {
    fn put(self, enc: &mut prometheus_client::encoding::MetricEncoder<'_>) -> Fmt {
        enc.encode_gauge(&i64::try_from(self).unwrap_or(i64::MAX))
    }
}

impl GaugeValue for f64 {
    fn put(self, enc: &mut prometheus_client::encoding::MetricEncoder<'_>) -> Fmt {
        enc.encode_gauge(&self)
    }
}

/// Writes one family: `name` (a counter's without `_total`), its help and type.
fn family<'a>(
    enc: &'a mut DescriptorEncoder<'_>,
    name: &'a str,
    help: &str,
    kind: MetricType,
) -> Result<Family<'a>, std::fmt::Error> {
    Ok(Family {
        enc: enc.encode_descriptor(name, help, None, kind)?,
    })
}

const NONE: [(&str, &str); 0] = [];

/// One warm pool's four metrics, `plimsoll_<which>_pool_*`.
fn pool(enc: &mut DescriptorEncoder, which: &str, p: &plimsoll_core::metrics::PoolStats) -> Fmt {
    use MetricType::{Counter, Gauge};
    let name = |what: &str| format!("plimsoll_{which}_pool_{what}");
    family(
        enc,
        &name("target"),
        &format!("The warm {which} pool's configured size (0: no pool)."),
        Gauge,
    )?
    .gauge(&NONE, p.target)?;
    family(
        enc,
        &name("ready"),
        &format!("Warm {which} sandboxes ready now."),
        Gauge,
    )?
    .gauge(&NONE, p.ready)?;
    family(
        enc,
        &name("filling"),
        &format!("Warm {which} sandboxes being made now."),
        Gauge,
    )?
    .gauge(&NONE, p.filling)?;
    family(
        enc,
        &name("refill_failures"),
        &format!("Warm {which} sandboxes that could not be made."),
        Counter,
    )?
    .counter(&NONE, p.refill_failures)
}

/// The engine's metrics, read from one snapshot per scrape.
#[derive(Debug)]
struct EngineCollector {
    engine: Engine,
}

impl Collector for EngineCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Fmt {
        let e = &self.engine;
        encode_engine(&mut enc, &e.metrics(), e.admission().limits().capacity())
    }
}

fn encode_engine(enc: &mut DescriptorEncoder, s: &Snapshot, capacity: u32) -> Fmt {
    use MetricType::{Counter, Gauge, Histogram};
    family(
        enc,
        "plimsoll_runs",
        "Runs answered with a result.",
        Counter,
    )?
    .counter(&NONE, s.stats.runs)?;
    family(
        enc,
        "plimsoll_runs_failed",
        "Runs that ended in an infrastructure error after dispatch.",
        Counter,
    )?
    .counter(&NONE, s.stats.failed)?;
    family(enc, "plimsoll_inflight", "Runs in progress.", Gauge)?
        .gauge(&NONE, u64::from(s.stats.in_flight))?;
    family(
        enc,
        "plimsoll_admission_capacity",
        "Runs that may be in progress at once (run slots, within the memory budget).",
        Gauge,
    )?
    .gauge(&NONE, u64::from(capacity))?;
    let mut f = family(
        enc,
        "plimsoll_shed",
        "Runs and session calls refused as at capacity, by reason.",
        Counter,
    )?;
    for (why, n) in &s.stats.shed {
        f.counter(&[("reason", why.as_str())], *n)?;
    }
    for (why, n) in &s.session_shed {
        f.counter(&[("reason", why.as_str())], *n)?;
    }
    for (why, n) in &s.paid_shed {
        f.counter(&[("reason", why.as_str())], *n)?;
    }
    let mut f = family(
        enc,
        "plimsoll_admission_waits",
        "Calls that waited before running, by reason (admission itself never queues).",
        Counter,
    )?;
    for (why, n) in &s.waits {
        f.counter(&[("reason", why.as_str())], *n)?;
    }
    let mut f = family(
        enc,
        "plimsoll_run_duration_seconds",
        "Dispatched runs' durations, by tier, kind and outcome.",
        Histogram,
    )?;
    // Only the pairs that have been observed: a series appears with its first run.
    for (kind, outcome, h) in s.durations.iter().filter(|(_, _, h)| h.count > 0) {
        let labels = [
            ("tier", s.tier),
            ("kind", kind.as_str()),
            ("outcome", outcome.as_str()),
        ];
        f.histogram(&labels, h)?;
    }
    let mut f = family(
        enc,
        "plimsoll_run_phase_seconds",
        "Where dispatched runs' time went, by tier and phase (admitted, acquired, started, running, collected, cleaned_up).",
        Histogram,
    )?;
    for (phase, h) in s.phases.iter().filter(|(_, h)| h.count > 0) {
        f.histogram(&[("tier", s.tier), ("phase", phase.as_str())], h)?;
    }
    family(enc, "plimsoll_sessions_open", "Sessions not ended.", Gauge)?
        .gauge(&NONE, s.sessions.open)?;
    family(
        enc,
        "plimsoll_sessions_suspended",
        "Open sessions suspended while idle.",
        Gauge,
    )?
    .gauge(&NONE, s.sessions.suspended)?;
    family(enc, "plimsoll_sessions_opened", "Sessions opened.", Counter)?
        .counter(&NONE, s.sessions.opened_total)?;
    pool(enc, "session", &s.pool)?;
    pool(enc, "snippet", &s.snippet_pool)?;
    let mut f = family(
        enc,
        "plimsoll_host_calls",
        "Brokered API calls, by profile, method, route pattern and outcome (status class or denied).",
        Counter,
    )?;
    for ((profile, method, route, outcome), n) in &s.broker_calls {
        let labels = [
            ("profile", profile.as_str()),
            ("method", method.as_str()),
            ("route", route.as_str()),
            ("outcome", outcome.as_str()),
        ];
        f.counter(&labels, *n)?;
    }
    family(
        enc,
        "plimsoll_provider_ready",
        "1 when the provider's readiness check (preflight, as /readyz) passed at this scrape.",
        Gauge,
    )?
    .gauge(
        &[("provider", s.provider)],
        u64::from(s.ready == Some(true)),
    )?;
    let providers = crate::providers().join(",");
    family(
        enc,
        "plimsoll_build_info",
        "The build (version, git commit, providers built in) and the provider serving.",
        Gauge,
    )?
    .gauge(
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("commit", crate::COMMIT),
            ("providers", providers.as_str()),
            ("provider", s.provider),
            ("isolation", s.tier),
        ],
        1u64,
    )?;
    Ok(())
}

/// The standard `process_*` metrics, from `/proc/self`.
#[derive(Debug)]
struct ProcessCollector;

/// `/proc` counts CPU time in USER_HZ ticks, 100 a second on every Linux ABI.
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc/self` says now; `None` where it cannot be read.
#[derive(Debug, Default, PartialEq)]
struct Process {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<u64>,
    virtual_bytes: Option<u64>,
    threads: Option<u64>,
    start_time_seconds: Option<f64>,
    open_fds: Option<u64>,
    max_fds: Option<u64>,
}

impl Process {
    fn read() -> Process {
        let text = |p: &str| std::fs::read_to_string(p).ok();
        let mut p = Process::default();
        if let Some(stat) = text("/proc/self/stat") {
            // The fields after the command (which may hold spaces) in its parentheses.
            let rest: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, r)| r.split_whitespace().collect())
                .unwrap_or_default();
            // `rest[0]` is field 3 (state): field n is rest[n - 3].
            let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
            if let (Some(u), Some(s)) = (field(14), field(15)) {
                p.cpu_seconds = Some((u + s) as f64 / TICKS_PER_SECOND);
            }
            p.threads = field(20);
            p.virtual_bytes = field(23);
            let boot = text("/proc/stat").and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("btime "))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            });
            if let (Some(boot), Some(start)) = (boot, field(22)) {
                p.start_time_seconds = Some(boot as f64 + start as f64 / TICKS_PER_SECOND);
            }
        }
        p.resident_bytes = text("/proc/self/status").and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
        });
        p.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64);
        p.max_fds = text("/proc/self/limits").and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Max open files"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        });
        p
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Fmt {
        use MetricType::{Counter, Gauge};
        let p = Process::read();
        let enc = &mut enc;
        if let Some(v) = p.cpu_seconds {
            family(
                enc,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                Counter,
            )?
            .enc
            .encode_counter::<NoLabelSet, _, f64>(&v, None)?;
        }
        let gauges: [(&str, &str, Option<f64>); 6] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                p.resident_bytes.map(|v| v as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                p.virtual_bytes.map(|v| v as f64),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                p.open_fds.map(|v| v as f64),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                p.max_fds.map(|v| v as f64),
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                p.threads.map(|v| v as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                p.start_time_seconds,
            ),
        ];
        for (name, help, v) in gauges {
            if let Some(v) = v {
                family(enc, name, help, Gauge)?.gauge(&NONE, v)?;
            }
        }
        Ok(())
    }
}

/// The registry a scrape encodes: the engine's and the process's collectors.
fn registry(engine: Engine) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(EngineCollector { engine }));
    r.register_collector(Box::new(ProcessCollector));
    r
}

/// Renders the metrics as OpenMetrics text (after the scrape's readiness check).
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, registry).is_err() {
        out.clear();
    }
    out
}

#[derive(Clone)]
struct Scrape {
    engine: Arc<Engine>,
    registry: Arc<Registry>,
}

async fn handle(State(s): State<Scrape>, req: axum::extract::Request) -> Response {
    if req.uri().path() != "/metrics" {
        let mut r = Response::new(Body::from("not found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    // Readiness as /readyz sees it now; a check that hangs counts as not ready.
    if tokio::time::timeout(READY_BUDGET, s.engine.ready())
        .await
        .is_err()
    {
        s.engine.not_ready();
    }
    let mut r = Response::new(Body::from(render(&s.registry)));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

/// The metrics router.
pub fn router(engine: Arc<Engine>) -> axum::Router {
    let registry = Arc::new(registry((*engine).clone()));
    axum::Router::new()
        .fallback(handle)
        .with_state(Scrape { engine, registry })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_self_reads_every_process_metric() {
        let p = Process::read();
        assert!(p.cpu_seconds.is_some_and(|v| v >= 0.0), "{p:?}");
        assert!(p.resident_bytes.is_some_and(|v| v > 1 << 20), "{p:?}");
        assert!(
            p.virtual_bytes
                .is_some_and(|v| v >= p.resident_bytes.unwrap_or(0))
        );
        assert!(p.threads.is_some_and(|v| v >= 1), "{p:?}");
        assert!(p.open_fds.is_some_and(|v| v >= 3), "{p:?}");
        assert!(p.max_fds.is_some_and(|v| v >= p.open_fds.unwrap_or(0)));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let start = p.start_time_seconds.unwrap_or(0.0);
        assert!(
            start > now - 3600.0 && start <= now + 1.0,
            "{start} vs {now}"
        );
    }
}
