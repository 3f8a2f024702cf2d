//! Metrics beside the spans, from the same committed record: runs by state and reviews waiting
//! (read from the store at each pass), and counts that grow with the log — decisions by kind,
//! review wait times, tokens and cost by agent — added once a page's spans were taken, so a page
//! sent again after a failure is not counted twice. Collected by hand and sent by the follower
//! on its own schedule, as cumulative sums over this process's life.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _, ObservableGauge};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};

use super::span::{Attr, Span};
use crate::error::Result;
use crate::event::Kind as Event;
use crate::store::audit::AuditRow;
use crate::store::{telemetry, Store};

/// What the store says now, for the gauges.
#[derive(Clone, Debug, Default)]
struct Now {
    runs: Vec<(String, i64)>,
    waiting: i64,
}

/// What a page of events adds to the counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// (source: policy, review or grant; decision)
    pub decisions: Vec<(&'static str, String)>,
    /// (risk, decision, wait in seconds)
    pub waits: Vec<(String, String, f64)>,
    /// (agent, input tokens, output tokens, cost in USD)
    pub usage: Vec<(String, i64, i64, Option<f64>)>,
}

impl Tally {
    /// The counts in a page: its policy decisions, and the reviews and model calls among the
    /// spans it closed.
    pub fn of(rows: &[AuditRow], spans: &[Span]) -> Result<Self> {
        let mut t = Tally::default();
        for row in rows.iter().filter(|r| r.kind == "policy.decided") {
            let Event::PolicyDecided(p) = super::build::event_of(row)? else {
                continue;
            };
            t.decisions.push(("policy", p.decision.as_str().to_owned()));
        }
        let text = |s: &Span, k: &str| match s.attr(k) {
            Some(Attr::Str(v)) => v.clone(),
            _ => String::new(),
        };
        let int = |s: &Span, k: &str| match s.attr(k) {
            Some(Attr::Int(n)) => *n,
            _ => 0,
        };
        for s in spans {
            match text(s, "gen_ai.operation.name").as_str() {
                "chat" => t.usage.push((
                    text(s, "gen_ai.agent.name"),
                    int(s, "gen_ai.usage.input_tokens"),
                    int(s, "gen_ai.usage.output_tokens"),
                    match s.attr("reins.cost_usd") {
                        Some(Attr::F64(c)) => Some(*c),
                        _ => None,
                    },
                )),
                _ if s.attr("reins.review.decision").is_some() => {
                    let decision = text(s, "reins.review.decision");
                    let source = if text(s, "reins.review.decider") == "grant" {
                        "grant"
                    } else {
                        "review"
                    };
                    t.decisions.push((source, decision.clone()));
                    if source == "review" {
                        let wait = int(s, "reins.review.wait_ms") as f64 / 1000.0;
                        t.waits.push((text(s, "reins.review.risk"), decision, wait));
                    }
                }
                _ => {}
            }
        }
        Ok(t)
    }
}

/// The reader the follower collects from, shared with the provider that owns it.
#[derive(Clone, Debug)]
struct Shared(Arc<ManualReader>);

impl MetricReader for Shared {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The instruments, and where they go.
pub struct Metrics {
    _provider: SdkMeterProvider,
    reader: Shared,
    exporter: opentelemetry_otlp::MetricExporter,
    now: Arc<Mutex<Now>>,
    decisions: Counter<u64>,
    waits: Histogram<f64>,
    tokens: Counter<u64>,
    cost: Counter<f64>,
    _gauges: Vec<ObservableGauge<i64>>,
}

impl Metrics {
    pub fn new(exporter: opentelemetry_otlp::MetricExporter, resource: opentelemetry_sdk::Resource) -> Self {
        let reader = Shared(Arc::new(ManualReader::builder().build()));
        let provider = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(reader.clone())
            .build();
        let meter = provider.meter("reins");
        let now = Arc::new(Mutex::new(Now::default()));
        let runs_now = now.clone();
        let runs = meter
            .i64_observable_gauge("reins.runs")
            .with_description("Runs by state")
            .with_callback(move |o| {
                if let Ok(now) = runs_now.lock() {
                    for (state, n) in &now.runs {
                        o.observe(*n, &[KeyValue::new("reins.run.state", state.clone())]);
                    }
                }
            })
            .build();
        let waiting_now = now.clone();
        let waiting = meter
            .i64_observable_gauge("reins.reviews.waiting")
            .with_description("Reviews waiting for a person")
            .with_callback(move |o| {
                if let Ok(now) = waiting_now.lock() {
                    o.observe(now.waiting, &[]);
                }
            })
            .build();
        Self {
            decisions: meter
                .u64_counter("reins.decisions")
                .with_description("Decisions on agents' actions, by source and kind")
                .build(),
            waits: meter
                .f64_histogram("reins.review.wait")
                .with_unit("s")
                .with_description("How long a review waited for its decision")
                .with_boundaries(vec![1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0])
                .build(),
            tokens: meter
                .u64_counter("reins.tokens")
                .with_unit("{token}")
                .with_description("Model tokens, by agent and type")
                .build(),
            cost: meter
                .f64_counter("reins.cost")
                .with_unit("USD")
                .with_description("Model cost, by agent")
                .build(),
            _gauges: vec![runs, waiting],
            _provider: provider,
            reader,
            exporter,
            now,
        }
    }

    /// Adds a page's counts (once its spans were taken).
    pub fn add(&self, t: &Tally) {
        for (source, decision) in &t.decisions {
            self.decisions.add(
                1,
                &[
                    KeyValue::new("reins.decision.source", *source),
                    KeyValue::new("reins.decision", decision.clone()),
                ],
            );
        }
        for (risk, decision, secs) in &t.waits {
            self.waits.record(
                *secs,
                &[
                    KeyValue::new("reins.review.risk", risk.clone()),
                    KeyValue::new("reins.review.decision", decision.clone()),
                ],
            );
        }
        for (agent, input, output, cost) in &t.usage {
            let agent = KeyValue::new("gen_ai.agent.name", agent.clone());
            for (kind, n) in [("input", input), ("output", output)] {
                self.tokens.add(
                    u64::try_from(*n).unwrap_or(0),
                    &[agent.clone(), KeyValue::new("gen_ai.token.type", kind)],
                );
            }
            if let Some(c) = cost {
                self.cost.add(*c, std::slice::from_ref(&agent));
            }
        }
    }

    /// Reads the gauges' figures from the store, collects every instrument and sends them.
    pub async fn send(&self, store: &Store) -> Result<()> {
        let runs = telemetry::runs_by_state(store.pool()).await?;
        let waiting = telemetry::reviews_waiting(store.pool()).await?;
        if let Ok(mut now) = self.now.lock() {
            *now = Now { runs, waiting };
        }
        let mut rm = ResourceMetrics::default();
        self.reader
            .collect(&mut rm)
            .map_err(|e| crate::error::Error::Io {
                context: "collecting metrics".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
        self.exporter
            .export(&rm)
            .await
            .map_err(|e| crate::error::Error::Io {
                context: "the collector did not take the metrics".into(),
                source: std::io::Error::other(e.to_string()),
            })
    }
}
