//! Wire compatibility: the official Rust A2A types (`a2a-lf`, dev-dependency only)
//! read everything the door writes, and the door accepts what they write.

use crate::support::door::*;
use a2a as lf; // the a2a-lf crate
use serde_json::{Value, json};

#[tokio::test]
async fn official_types_read_the_card_tasks_lists_and_stream_events() {
    let f = start(Setup::default()).await;

    let card: lf::AgentCard = f
        .client
        .get(format!("{}.well-known/agent-card.json", f.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .expect("a2a-lf reads the Agent Card");
    assert_eq!(card.supported_interfaces[0].url, f.url);
    let ext = &card.capabilities.extensions.as_ref().unwrap()[0];
    assert_eq!(ext.params.as_ref().unwrap()["sessionId"], SESSION);

    // A request written by the official types is accepted.
    let mut message = lf::Message::new(lf::Role::User, vec![lf::Part::text("wire")]);
    message.message_id = "m-wire".into();
    let request = lf::SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let sent = f
        .ok(
            Some(OPERATOR),
            "SendMessage",
            serde_json::to_value(&request).unwrap(),
        )
        .await;
    let response: lf::SendMessageResponse =
        serde_json::from_value(sent.clone()).expect("a2a-lf reads SendMessage's result");
    let lf::SendMessageResponse::Task(task) = response else {
        panic!("expected a task: {sent}");
    };
    assert_eq!(task.status.state, lf::TaskState::Completed);
    assert_eq!(task.artifacts.as_ref().unwrap().len(), 1);

    let got = f
        .ok(Some(OPERATOR), "GetTask", json!({"id": task.id}))
        .await;
    let task: lf::Task = serde_json::from_value(got.clone()).expect("a2a-lf reads a Task");
    // And what a2a-lf writes back reads as ours, unchanged.
    let back: mur::a2a::Task =
        serde_json::from_value(serde_json::to_value(&task).unwrap()).unwrap();
    let ours: mur::a2a::Task = serde_json::from_value(got).unwrap();
    assert_eq!(back, ours);

    let list = f.ok(Some(OPERATOR), "ListTasks", json!({})).await;
    let list: lf::ListTasksResponse = serde_json::from_value(list).expect("a2a-lf reads ListTasks");
    assert_eq!(list.total_size, 1);

    let events = f
        .stream(
            Some(OPERATOR),
            "SendStreamingMessage",
            message_json("stream"),
        )
        .await;
    assert!(events.len() >= 3);
    for e in events {
        let _: lf::StreamResponse =
            serde_json::from_value(e["result"].clone()).expect("a2a-lf reads each event");
    }
}

fn message_json(text: &str) -> Value {
    message(text)
}
