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

/// A model that asks for `calls` calls of `tool` on its first turn, then answers.
struct Script {
    tool: &'static str,
    calls: usize,
}

impl Transport for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn turn<'a>(&'a mut self, c: &'a Conversation) -> BoxFuture<'a, Result<Reply, String>> {
        let asked = c
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { .. }));
        let (tool, n) = (self.tool, self.calls);
        Box::pin(async move {
            Ok(if asked {
                Reply::Answer {
                    text: Some("done".into()),
                    artifacts: vec![],
                }
            } else {
                Reply::ToolCalls {
                    text: None,
                    calls: (0..n)
                        .map(|i| ToolCall {
                            id: format!("c{i}"),
                            name: tool.into(),
                            arguments: serde_json::json!({"i": i}),
                        })
                        .collect(),
                }
            })
        })
    }
}

fn scripted(tool: Arc<dyn Tool>, calls: usize, trace: Option<Arc<TraceWriter>>) -> Agent {
    Agent::new(AgentSpec {
        task_id: "t1".into(),
        system: String::new(),
        max_turns: 4,
        tools: vec![tool],
        transport: Box::new(Script {
            tool: "gauge",
            calls,
        }),
        trace,
    })
}

/// A tool that counts how many of its calls run at once; each yields a while, so
/// every call the loop lets start is running before any ends.
#[derive(Default)]
struct Gauge {
    live: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    /// Bytes each call returns (0: its index).
    result: usize,
}

impl Tool for Gauge {
    fn name(&self) -> &str {
        "gauge"
    }
    fn description(&self) -> &str {
        "Counts."
    }
    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutput> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.live.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            self.live.fetch_sub(1, SeqCst);
            if self.result > 0 {
                return ToolOutput::ok("é".repeat(self.result / 2));
            }
            ToolOutput::ok(call.arguments["i"].to_string())
        })
    }
}

fn tool_outputs(a: &Agent) -> Vec<String> {
    a.conversation()
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_turns_tool_calls_run_at_most_parallel_tools_at_once_and_come_back_in_order() {
    let order: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    for (parallel, expect) in [
        (None, crate::manifest::PARALLEL_TOOLS as usize),
        (Some(3), 3),
        (Some(1), 1),
    ] {
        let gauge = Arc::new(Gauge::default());
        let mut a = scripted(gauge.clone(), 10, None);
        if let Some(n) = parallel {
            a = a.with_parallel_tools(n);
        }
        let outcome = a.send("Count.", &CancellationToken::new()).await;
        assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
        let most = gauge.most.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(most, expect, "parallel_tools {parallel:?}");
        assert_eq!(tool_outputs(&a), order);
    }
}

#[tokio::test]
async fn a_huge_tool_result_is_cut_for_the_model_and_the_trace_and_says_how_much() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Arc::new(TraceWriter::create(&dir.path().join("trace.jsonl")).unwrap());
    let gauge = Arc::new(Gauge {
        result: 1 << 20,
        ..Gauge::default()
    });
    let mut a = scripted(gauge, 1, Some(trace.clone()));
    a.send("Read.", &CancellationToken::new()).await;
    let seen = tool_outputs(&a);
    // "é" is two bytes: the cut falls on a character boundary.
    let kept = RESULT_LIMIT;
    let note = format!(
        "\n[mur: tool result cut to its first {kept} of {} bytes ({} bytes left out); \
         the limit is {RESULT_LIMIT} bytes]",
        1 << 20,
        (1 << 20) - kept
    );
    assert_eq!(seen, [format!("{}{note}", "é".repeat(kept / 2))]);
    let traced: Vec<String> = crate::trace::read(trace.path())
        .unwrap()
        .records
        .into_iter()
        .filter_map(|r| match r.event {
            Event::ToolResult { output, .. } => Some(output),
            _ => None,
        })
        .collect();
    assert_eq!(traced, seen);
    let longest = std::fs::read_to_string(trace.path())
        .unwrap()
        .lines()
        .map(str::len)
        .max()
        .unwrap();
    assert!(
        longest < RESULT_LIMIT + 1024,
        "a trace line of {longest} bytes"
    );
}
