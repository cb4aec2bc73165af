//! The JSON-RPC 2.0 binding of A2A 1.0: the envelope, method names, each method's
//! params and result, and the error codes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::types::{Message, Object, Task, TaskId, TaskState};

pub const SEND_MESSAGE: &str = "SendMessage";
pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
pub const GET_TASK: &str = "GetTask";
pub const LIST_TASKS: &str = "ListTasks";
pub const CANCEL_TASK: &str = "CancelTask";
pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
/// mur's operator methods.
pub const WATCH_SESSION: &str = "murmur.WatchSession";
pub const STOP_SESSION: &str = "murmur.StopSession";
pub const RESOURCES_FILES: &str = "resources/files";

// JSON-RPC 2.0 codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
// A2A codes (SPEC §5.4).
pub const TASK_NOT_FOUND: i64 = -32001;
pub const TASK_NOT_CANCELABLE: i64 = -32002;
pub const UNSUPPORTED_OPERATION: i64 = -32004;
pub const VERSION_NOT_SUPPORTED: i64 = -32009;
/// mur's own code, in A2A's implementation range: the member already holds as many
/// tasks as its lifecycle allows (`single`: one; `queue`: one plus `queue_depth`).
/// A caller may retry later; nothing was created.
pub const MEMBER_BUSY: i64 = -32050;
/// mur's own code: the call would close a wait cycle (a task of this member is
/// waiting on the call), so it could never be taken; nothing was created.
pub const WAIT_CYCLE: i64 = -32051;

/// A JSON-RPC request id: a string or an integer (mur refuses other shapes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Int(i64),
    Str(String),
    Null,
}

/// An error object. `data`, when present, is an array of ProtoJSON `Any` objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds a `google.rpc.ErrorInfo` detail naming `reason`, as SPEC §9.5 shows.
    pub fn reason(mut self, reason: &str, domain: &str) -> Self {
        self.data = Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": domain,
        }]));
        self
    }

    pub fn parse(detail: impl std::fmt::Display) -> Self {
        RpcError::new(PARSE_ERROR, format!("Parse error: {detail}"))
    }
    pub fn invalid_request(detail: impl std::fmt::Display) -> Self {
        RpcError::new(INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }
    pub fn invalid_params(detail: impl std::fmt::Display) -> Self {
        RpcError::new(INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        RpcError::new(INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
    pub fn task_not_found() -> Self {
        RpcError::new(TASK_NOT_FOUND, "Task not found").reason("TASK_NOT_FOUND", A2A_DOMAIN)
    }
    pub fn not_cancelable(state: TaskState) -> Self {
        let state = serde_json::to_value(state).unwrap_or(Value::Null);
        let state = state.as_str().unwrap_or("?");
        RpcError::new(
            TASK_NOT_CANCELABLE,
            format!("Task cannot be canceled: it is {state}"),
        )
        .reason("TASK_NOT_CANCELABLE", A2A_DOMAIN)
    }
    pub fn unsupported(detail: impl std::fmt::Display) -> Self {
        RpcError::new(
            UNSUPPORTED_OPERATION,
            format!("Unsupported operation: {detail}"),
        )
        .reason("UNSUPPORTED_OPERATION", A2A_DOMAIN)
    }
    pub fn version_not_supported(version: &str) -> Self {
        RpcError::new(
            VERSION_NOT_SUPPORTED,
            format!("Protocol version {version:?} is not supported; this door speaks 1.0"),
        )
        .reason("VERSION_NOT_SUPPORTED", A2A_DOMAIN)
    }
    /// `cycle`: `a → b → a`, the member refusing first and last.
    pub fn wait_cycle(cycle: &str) -> Self {
        let mut e = RpcError::new(
            WAIT_CYCLE,
            format!(
                "Wait cycle {cycle}: this member's task is waiting on the call, so it could \
                 never take it; the call was refused at once (W-ROS-002)"
            ),
        );
        e.data = Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "WAIT_CYCLE",
            "domain": MUR_DOMAIN,
        }]));
        e
    }
    pub fn busy(holds: u32) -> Self {
        let mut e = RpcError::new(
            MEMBER_BUSY,
            format!(
                "Member busy: it already holds {holds} task{} and takes no more until one ends; retry later",
                if holds == 1 { "" } else { "s" }
            ),
        );
        e.data = Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "MEMBER_BUSY",
            "domain": MUR_DOMAIN,
            "metadata": {"holds": holds.to_string()},
        }]));
        e
    }
}

pub const A2A_DOMAIN: &str = "a2a-protocol.org";
pub const MUR_DOMAIN: &str = "murmur.dev";

/// A response envelope: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub jsonrpc: String,
    pub id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    pub fn ok(id: Id, result: Value) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }
    pub fn err(id: Id, error: RpcError) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error),
        }
    }
}

/// A request as sent by a client (the door reads requests field by field instead,
/// to give each malformed part its own error).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: String,
    pub id: Id,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    pub fn new(id: i64, method: &str, params: Value) -> Self {
        Request {
            jsonrpc: "2.0".into(),
            id: Id::Int(id),
            method: method.into(),
            params: Some(params),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    /// false (the default): SendMessage waits until the task is terminal or interrupted.
    #[serde(default)]
    pub return_immediately: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// Exactly one of `{"task": …}` and `{"message": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    pub id: TaskId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// CancelTask's and SubscribeToTask's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    pub id: TaskId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Object>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    #[serde(default)]
    pub include_artifacts: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// All four fields always present; `nextPageToken` is `""` on the last page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    pub next_page_token: String,
    pub page_size: u32,
    pub total_size: u32,
}

/// `resources/files` params: a folder relative to the session's files root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// Relative to the files root, `/`-separated.
    pub path: String,
    /// `file`, `dir` or `symlink` (symlinks are listed, never followed).
    pub kind: String,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesResponse {
    pub files: Vec<FileEntry>,
    /// True when the listing stopped at the door's entry cap.
    pub truncated: bool,
}
