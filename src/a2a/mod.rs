//! A2A 1.0 protocol types, written in-house to the exact wire shape of the JSON-RPC
//! binding: camelCase field names, ProtoJSON enum names (`TASK_STATE_COMPLETED`,
//! `ROLE_USER`), optional fields omitted rather than `null`, unknown fields ignored.
//!
//! `types` holds the data model (Task, Message, Part, Artifact, events, Agent Card),
//! `rpc` the JSON-RPC envelope, the method requests and responses, and the error codes.

pub mod rpc;
pub mod time;
pub mod types;

pub use rpc::*;
pub use types::*;

/// The protocol version this door speaks (`A2A-Version` header, Agent Card).
pub const PROTOCOL_VERSION: &str = "1.0";
