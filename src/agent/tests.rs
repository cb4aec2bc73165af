//! The loop with the built-in model and a call-member tool that really answers.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::trace::{Event, TraceWriter};

/// A call-member that answers every call at once, as the called member would.
struct Members {
    callees: Vec<String>,
    description: String,
    seen: Mutex<Vec<Value>>,
}

impl Members {
    fn new(callees: &[&str]) -> Arc<Self> {
        let names: Vec<crate::ids::MemberName> =
            callees.iter().map(|c| c.parse().unwrap()).collect();
        let callees: Vec<String> = callees.iter().map(|c| c.to_string()).collect();
        Arc::new(Members {
            description: call_member_description(&names),
            callees,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Tool for Members {
    fn name(&self) -> &str {
        CALL_MEMBER
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        call_member_schema()
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(call.arguments.clone());
            let member = call.arguments["member"].as_str().unwrap_or("");
            if !self.callees.iter().any(|c| c == member) {
                return ToolOutput::error(format!("{member} is not a member you may call"));
            }
            ToolOutput::ok(format!(
                "{member} did: {}",
                call.arguments["task"].as_str().unwrap_or("")
            ))
        })
    }
}

fn agent(tools: Vec<Arc<dyn Tool>>, trace: Option<Arc<TraceWriter>>) -> Agent {
    Agent::new(AgentSpec {
        task_id: "t1".into(),
        system: String::new(),
        max_turns: 8,
        tools,
        transport: transport(&TransportConfig::Builtin, None).unwrap(),
        trace,
    })
}

#[tokio::test]
async fn builtin_calls_each_callee_and_quotes_every_answer() {
    let members = Members::new(&["coder", "reviewer"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = Arc::new(TraceWriter::create(&dir.path().join("trace.jsonl")).unwrap());
    let mut a = agent(vec![members.clone()], Some(trace.clone()));
    let outcome = a.send("Add a login page.", &CancellationToken::new()).await;
    assert_eq!(
        outcome,
        Outcome::Completed {
            message: Some(
                "Answers for: Add a login page.\n\n\
                 coder answered:\n> coder did: Add a login page.\n\n\
                 reviewer answered:\n> reviewer did: Add a login page.\n"
                    .into()
            ),
            artifacts: vec![]
        }
    );
    let seen = members.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let records = crate::trace::read(trace.path()).unwrap().records;
    let turns: Vec<(u32, Vec<String>)> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::InferenceTurn {
                turn,
                tool_calls,
                transport,
                ..
            } => {
                assert_eq!(transport, "builtin");
                Some((*turn, tool_calls.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        turns,
        [
            (1, vec![CALL_MEMBER.to_string(), CALL_MEMBER.to_string()]),
            (2, vec![])
        ]
    );
}

#[tokio::test]
async fn builtin_without_call_member_answers_with_a_plan() {
    let outcome = agent(vec![], None)
        .send("Read the spec. Write the code", &CancellationToken::new())
        .await;
    assert_eq!(
        outcome,
        Outcome::Completed {
            message: Some(
                "Plan for: Read the spec. Write the code\n\n1. Read the spec.\n\
                 2. Write the code\n3. Check the result against the task.\n"
                    .into()
            ),
            artifacts: vec![]
        }
    );
}

#[tokio::test]
async fn builtin_with_one_turn_cannot_wait_for_answers() {
    let mut a = Agent::new(AgentSpec {
        task_id: "t1".into(),
        system: String::new(),
        max_turns: 1,
        tools: vec![Members::new(&["coder"])],
        transport: transport(&TransportConfig::Builtin, None).unwrap(),
        trace: None,
    });
    let Outcome::Failed { reason } = a.send("x", &CancellationToken::new()).await else {
        panic!()
    };
    assert!(reason.contains("inference.max_turns (1)"), "{reason}");
}

#[tokio::test]
async fn zero_turns_and_a_canceled_token_end_at_once() {
    let mut a = Agent::new(AgentSpec {
        task_id: "t1".into(),
        system: String::new(),
        max_turns: 0,
        tools: vec![],
        transport: transport(&TransportConfig::Builtin, None).unwrap(),
        trace: None,
    });
    assert!(matches!(
        a.send("x", &CancellationToken::new()).await,
        Outcome::Failed { .. }
    ));
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert_eq!(
        agent(vec![], None).send("x", &cancel).await,
        Outcome::Canceled
    );
}

#[test]
fn http_needs_its_key_variable_and_a_loaded_driver_when_it_names_one() {
    let http = |api_key_env: Option<&str>, driver: Option<&str>| {
        let mut c = HttpConfig::new("http://127.0.0.1:1/v1", "m");
        c.api_key_env = api_key_env.map(str::to_string);
        c.driver = driver.map(str::to_string);
        transport(&TransportConfig::Http(c), None)
    };
    let err = http(Some("MUR_TEST_SURELY_UNSET_KEY"), None).err().unwrap();
    assert!(err.contains("MUR_TEST_SURELY_UNSET_KEY"), "{err}");
    let err = http(None, Some("driver.wasm")).err().unwrap();
    assert!(err.contains("driver"), "{err}");
    assert_eq!(http(None, None).unwrap().name(), "http");
}
