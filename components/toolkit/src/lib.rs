//! Shared by the guests of this workspace: the `tool-component` world's bindings
//! (re-exported with their `export!` macro) and small JSON helpers.

wit_bindgen::generate!({
    world: "tool-component",
    path: "../../wit",
    pub_export_macro: true,
    default_bindings_module: "toolkit",
    generate_all,
});

pub use exports::murmur::capsule::tool::{Guest, Output};
/// murmur:message/send: give a formation member work at its virtual address.
pub use murmur::message::send::{Task, send};
pub use serde_json::{Value, json};

/// A result for the model.
pub fn ok(content: impl Into<String>) -> Output {
    Output {
        content: content.into(),
        is_error: false,
    }
}

/// An error for the model.
pub fn error(content: impl Into<String>) -> Output {
    Output {
        content: content.into(),
        is_error: true,
    }
}

/// The string argument `key` of the call's JSON object.
pub fn arg(arguments: &str, key: &str) -> Result<String, Output> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| error(format!("the arguments are not JSON: {e}")))?;
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| error(format!("missing string argument `{key}`")))
}

/// An object schema whose properties are all required strings.
pub fn schema(props: &[(&str, &str)]) -> String {
    let properties: serde_json::Map<String, Value> = props
        .iter()
        .map(|(k, d)| (k.to_string(), json!({"type": "string", "description": d})))
        .collect();
    let required: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
    json!({"type": "object", "properties": properties, "required": required}).to_string()
}

#[cfg(feature = "http")]
pub mod http;
