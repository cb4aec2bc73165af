//! A capsule's WASM tool on `transport: http`, with the test model server: the model
//! is offered it and reads its result.

use super::*;
use crate::models::{Server, message, ok};

#[tokio::test]
async fn on_the_http_transport_the_model_is_offered_the_tool_and_reads_its_result() {
    let reply = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "echo", "arguments": json!({"text": "over http"}).to_string()}}]}}]});
    let server = Server::start(vec![ok(reply), ok(message("done"))], None).await;
    let w = World::new();
    share_cache(&w);
    let src = w.dir.path().join("src/web");
    std::fs::create_dir_all(src.join("tools")).unwrap();
    std::fs::copy(guest("tool-echo"), src.join("tools/echo.wasm")).unwrap();
    std::fs::write(
        src.join("murmur.yaml"),
        format!(
            "name: web\nversion: 1.0.0\ndescription: d\nagent:\n  transport: http\n  base_url: \"{}\"\n  model: m\n{}",
            server.base,
            tools_yaml(&[("echo", "tools/echo.wasm")])
        ),
    )
    .unwrap();
    let w = tokio::task::spawn_blocking(move || {
        let out = w.mur().arg("install").arg(&src).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = w.run_task("web", "Echo over http.");
        let trace = ran(&w, &out);
        assert_eq!(final_state(&trace), "completed");
        assert_eq!(results(&trace)["c1"], (false, "over http".to_string()));
        w
    })
    .await
    .unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let tool = &bodies[0]["tools"][0]["function"];
    assert_eq!(tool["name"], "echo");
    assert_eq!(tool["description"], "The echo tool.");
    assert_eq!(tool["parameters"]["required"], json!(["text"]));
    let said = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(said["content"], "over http");
    drop(w);
}
