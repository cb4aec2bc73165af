//! JSON-RPC request decoding as the door does it: the envelope, then the params of
//! the method it names. Every input gets a JSON-RPC code, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mur::a2a;
use serde_json::Value;

fn decode<T: serde::de::DeserializeOwned>(params: Value) {
    let _ = serde_json::from_value::<T>(params);
}

fuzz_target!(|data: &[u8]| {
    match mur::door::parse_envelope(data) {
        Err((_, e)) => assert!(
            [a2a::PARSE_ERROR, a2a::INVALID_REQUEST, a2a::INVALID_PARAMS].contains(&e.code),
            "{}",
            e.code
        ),
        Ok(call) => match call.method.as_str() {
            a2a::SEND_MESSAGE | a2a::SEND_STREAMING_MESSAGE => {
                decode::<a2a::SendMessageRequest>(call.params)
            }
            a2a::GET_TASK => decode::<a2a::GetTaskRequest>(call.params),
            a2a::LIST_TASKS => decode::<a2a::ListTasksRequest>(call.params),
            a2a::CANCEL_TASK | a2a::SUBSCRIBE_TO_TASK => decode::<a2a::TaskIdRequest>(call.params),
            a2a::RESOURCES_FILES => decode::<a2a::FilesRequest>(call.params),
            _ => {}
        },
    }
});
