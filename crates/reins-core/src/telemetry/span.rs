//! A span as Reins builds it from the log, and its OpenTelemetry form.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    F64(f64),
    Strs(Vec<String>),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Self {
        Attr::Str(s.to_owned())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Self {
        Attr::Str(s)
    }
}

impl From<i64> for Attr {
    fn from(n: i64) -> Self {
        Attr::Int(n)
    }
}

/// Something that happened during a span (a containment block on its step).
#[derive(Clone, Debug, PartialEq)]
pub struct Happening {
    pub name: String,
    pub at_ms: i64,
    pub attributes: Vec<(&'static str, Attr)>,
}

/// One finished span.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub trace: [u8; 16],
    pub id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start_ms: i64,
    pub end_ms: i64,
    pub attributes: Vec<(&'static str, Attr)>,
    pub events: Vec<Happening>,
    /// Why it ended badly (failed, rejected, blocked), if it did.
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Internal,
    /// A call out of Reins (to a model).
    Client,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The span as the OpenTelemetry SDK's exporters take it.
    pub fn to_data(&self) -> SpanData {
        let context = SpanContext::new(
            TraceId::from_bytes(self.trace),
            SpanId::from_bytes(self.id),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let mut events = SpanEvents::default();
        events.events = self
            .events
            .iter()
            .map(|e| {
                opentelemetry::trace::Event::new(
                    e.name.clone(),
                    time(e.at_ms),
                    key_values(&e.attributes),
                    0,
                )
            })
            .collect();
        SpanData {
            span_context: context,
            parent_span_id: self.parent.map_or(SpanId::INVALID, SpanId::from_bytes),
            parent_span_is_remote: false,
            span_kind: match self.kind {
                Kind::Internal => SpanKind::Internal,
                Kind::Client => SpanKind::Client,
            },
            name: Cow::Owned(self.name.clone()),
            start_time: time(self.start_ms),
            end_time: time(self.end_ms.max(self.start_ms)),
            attributes: key_values(&self.attributes),
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: match &self.error {
                None => Status::Unset,
                Some(why) => Status::error(why.clone()),
            },
            instrumentation_scope: InstrumentationScope::builder("reins")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        }
    }
}

fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn key_values(attrs: &[(&'static str, Attr)]) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Attr::Str(s) => Value::from(s.clone()),
                Attr::Int(n) => Value::I64(*n),
                Attr::F64(f) => Value::F64(*f),
                Attr::Strs(list) => Value::Array(opentelemetry::Array::String(
                    list.iter().cloned().map(StringValue::from).collect(),
                )),
            };
            KeyValue::new(*k, value)
        })
        .collect()
}
