//! OTLP/JSON wire types (`opentelemetry.proto.trace.v1.TracesData`), hand-written
//! with serde as the OTLP spec encodes them: lowerCamelCase names, trace and span
//! ids as hex (not base64), enums as integers, 64-bit integers as decimal strings.
//! No opentelemetry crate: the 0.3x stack pulls in a gRPC tree (docs/trace.md).

use serde::Serialize;

/// The semantic conventions the span names and attributes follow (all Development).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/gen-ai/1.42.0";

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TracesData {
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans {
    pub resource: Resource,
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Resource {
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeSpans {
    pub scope: Scope,
    pub spans: Vec<Span>,
    pub schema_url: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scope {
    pub name: &'static str,
    pub version: &'static str,
}

impl Scope {
    pub fn mur() -> Scope {
        Scope {
            name: "mur",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Unset = 0,
    Ok = 1,
    Error = 2,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_span_id: String,
    pub name: String,
    #[serde(serialize_with = "as_int")]
    pub kind: Kind,
    pub start_time_unix_nano: String,
    pub end_time_unix_nano: String,
    pub attributes: Vec<KeyValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SpanEvent>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    pub status: Status,
}

fn as_int<S: serde::Serializer>(kind: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u8(*kind as u8)
}

fn code_int<S: serde::Serializer>(code: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u8(*code as u8)
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    #[serde(serialize_with = "code_int")]
    pub code: Code,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanEvent {
    pub time_unix_nano: String,
    pub name: String,
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub trace_id: String,
    pub span_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: AnyValue,
}

/// `AnyValue`: the kinds mur writes.
#[derive(Debug, Clone, Serialize)]
pub enum AnyValue {
    #[serde(rename = "stringValue")]
    String(String),
    /// int64: a decimal string in OTLP/JSON.
    #[serde(rename = "intValue")]
    Int(String),
}

/// `key` = a string.
pub fn kv(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: AnyValue::String(value.into()),
    }
}

/// `key` = an integer.
pub fn kv_int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: AnyValue::Int(value.to_string()),
    }
}
