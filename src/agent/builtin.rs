//! `transport: builtin`: a deterministic offline model shipped in the binary, so a
//! capsule runs with no key and no network. It reads only the conversation, so the
//! same conversation always gets the same reply. docs/agent.md states its rules.

use super::{
    BoxFuture, CALL_MEMBER, CALLEES_LEAD, Conversation, Message, Reply, ToolCall, Transport,
};

/// The built-in model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtin;

impl Transport for Builtin {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn turn<'a>(&'a mut self, c: &'a Conversation) -> BoxFuture<'a, Result<Reply, String>> {
        Box::pin(async move { Ok(reply(c)) })
    }
}

/// The built-in model's reply to a conversation.
pub fn reply(c: &Conversation) -> Reply {
    let start = c
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }));
    let Some(start) = start else {
        return Reply::Rejected {
            reason: "there is no task".to_string(),
        };
    };
    let task = match &c.messages[start] {
        Message::User { text } => text.as_str(),
        _ => "",
    };
    let since = &c.messages[start + 1..];
    if let Some(blocks) = crate::fence::parse(task) {
        // The members' answers came back into the task: answer from them.
        let task = c.messages[..start]
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { text } if crate::fence::parse(text).is_none() => {
                    Some(text.as_str())
                }
                _ => None,
            })
            .unwrap_or("");
        let quoted: Vec<(String, bool, &str)> = blocks
            .iter()
            .map(|b| (b.member.clone(), b.state == "completed", b.body.as_str()))
            .collect();
        return Reply::Answer {
            text: Some(summary(task, &quoted)),
            artifacts: Vec::new(),
        };
    }
    if task.trim().is_empty() {
        return Reply::Rejected {
            reason: "the task is empty".to_string(),
        };
    }
    let answers: Vec<(&str, &str, bool)> = since
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id,
                output,
                is_error,
                ..
            } => Some((call_id.as_str(), output.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    if !answers.is_empty() {
        let quoted: Vec<(String, bool, &str)> = answers
            .iter()
            .map(|(call_id, output, is_error)| {
                let who = member_of(since, call_id).unwrap_or_else(|| (*call_id).to_string());
                (who, !is_error, *output)
            })
            .collect();
        return Reply::Answer {
            text: Some(summary(task, &quoted)),
            artifacts: Vec::new(),
        };
    }
    if let Some(call) = asked_tool(c, task) {
        return Reply::ToolCalls {
            text: Some(format!("Calling {}.", call.name)),
            calls: vec![call],
        };
    }
    let callees = callees(c);
    if callees.is_empty() {
        return Reply::Answer {
            text: Some(plan(task)),
            artifacts: Vec::new(),
        };
    }
    let calls = callees
        .iter()
        .enumerate()
        .map(|(i, member)| ToolCall {
            id: format!("call_{}", i + 1),
            name: CALL_MEMBER.to_string(),
            arguments: serde_json::json!({"member": member, "task": task}),
        })
        .collect();
    Reply::ToolCalls {
        text: Some(format!("Asking {}.", callees.join(", "))),
        calls,
    }
}

/// A task of the form `tool: <name> <JSON arguments>` naming an offered tool: that
/// call (the arguments `{}` when none are written). Lets a capsule's WASM tools be
/// driven on the offline model (docs/agent.md).
fn asked_tool(c: &Conversation, task: &str) -> Option<ToolCall> {
    let rest = task.trim().strip_prefix("tool:")?.trim_start();
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !c.tools.iter().any(|t| t.name == name) {
        return None;
    }
    let args = args.trim();
    let arguments = if args.is_empty() {
        serde_json::json!({})
    } else {
        serde_json::from_str(args).ok()?
    };
    Some(ToolCall {
        id: "call_1".to_string(),
        name: name.to_string(),
        arguments,
    })
}

/// The members named in call-member's description, when the tool is offered.
fn callees(c: &Conversation) -> Vec<String> {
    let Some(tool) = c.tools.iter().find(|t| t.name == CALL_MEMBER) else {
        return Vec::new();
    };
    let Some(at) = tool.description.find(CALLEES_LEAD) else {
        return Vec::new();
    };
    let list = tool.description[at + CALLEES_LEAD.len()..]
        .lines()
        .next()
        .unwrap_or("");
    list.trim()
        .trim_end_matches('.')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// "Plan for: <task>" and one numbered step per sentence of the task, then a check.
pub fn plan(task: &str) -> String {
    let mut out = format!("Plan for: {}\n", headline(task));
    let steps = sentences(task);
    let n = steps.len();
    for (i, s) in steps.into_iter().enumerate() {
        out.push_str(&format!("\n{}. {}", i + 1, s));
    }
    out.push_str(&format!(
        "\n{}. Check the result against the task.\n",
        n + 1
    ));
    out
}

/// Quotes every answer (who, whether it succeeded, what it said) under its member.
fn summary(task: &str, answers: &[(String, bool, &str)]) -> String {
    let mut out = format!("Answers for: {}\n", headline(task));
    for (who, ok, output) in answers {
        let verb = if *ok { "answered" } else { "failed" };
        out.push_str(&format!("\n{who} {verb}:\n"));
        let body = if output.trim().is_empty() {
            "(nothing)"
        } else {
            output.trim_end()
        };
        for line in body.lines() {
            out.push_str(format!("> {line}").trim_end());
            out.push('\n');
        }
    }
    out
}

/// The member a call-member call went to, from the call's arguments.
fn member_of(since: &[Message], call_id: &str) -> Option<String> {
    since.iter().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } => {
            tool_calls.iter().find(|c| c.id == call_id).map(|c| {
                match c.arguments.get("member").and_then(|v| v.as_str()) {
                    Some(member) => member.to_string(),
                    None => c.name.clone(),
                }
            })
        }
        _ => None,
    })
}

/// The task on one line, cut at 200 characters.
fn headline(task: &str) -> String {
    let line = task.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The task's sentences: ended by `.`, `!` or `?` before whitespace, or by a line
/// break; each starts with a capital letter.
fn sentences(task: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = task.chars().peekable();
    while let Some(ch) = chars.next() {
        let ends = match ch {
            '\n' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        if ch != '\n' {
            current.push(ch);
        }
        if ends {
            push_sentence(&mut out, &current);
            current.clear();
        }
    }
    push_sentence(&mut out, &current);
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    // A bullet the operator typed is not part of the step.
    let s = s.trim_start_matches(['-', '*', '•']);
    let s = s.trim();
    if s.chars().any(char::is_alphanumeric) {
        let mut chars = s.chars();
        let first = chars.next().map(|c| c.to_uppercase().to_string());
        out.push(format!("{}{}", first.unwrap_or_default(), chars.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{ToolSpec, call_member_description, call_member_schema};

    fn conv(tools: Vec<ToolSpec>, messages: Vec<Message>) -> Conversation {
        Conversation {
            task_id: "t".into(),
            system: String::new(),
            tools,
            messages,
        }
    }

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    #[test]
    fn plan_numbers_the_sentences_of_the_task() {
        let r = reply(&conv(
            vec![],
            vec![user("write a parser. test it!\n- ship v1.2 today")],
        ));
        assert_eq!(
            r,
            Reply::Answer {
                text: Some(
                    "Plan for: write a parser. test it! - ship v1.2 today\n\n\
                     1. Write a parser.\n2. Test it!\n3. Ship v1.2 today\n\
                     4. Check the result against the task.\n"
                        .into()
                ),
                artifacts: vec![]
            }
        );
    }

    #[test]
    fn a_task_naming_an_offered_tool_calls_it_else_falls_through_to_a_plan() {
        let echo = ToolSpec {
            name: "echo".into(),
            description: "Echoes.".into(),
            input_schema: serde_json::json!({"type": "object"}),
        };
        let r = reply(&conv(
            vec![echo.clone()],
            vec![user(r#"tool: echo {"text": "hi"}"#)],
        ));
        let Reply::ToolCalls { calls, .. } = r else {
            panic!("no tool call: {r:?}")
        };
        assert_eq!(calls[0].name, "echo");
        assert_eq!(calls[0].arguments, serde_json::json!({"text": "hi"}));
        for task in ["tool: echo {not json", "tool: other {}"] {
            let r = reply(&conv(vec![echo.clone()], vec![user(task)]));
            assert!(matches!(r, Reply::Answer { .. }), "{task}: {r:?}");
        }
    }

    #[test]
    fn an_empty_task_is_rejected() {
        assert!(matches!(
            reply(&conv(vec![], vec![user("  \n")])),
            Reply::Rejected { .. }
        ));
    }

    #[test]
    fn with_call_member_it_asks_every_callee_then_quotes_the_answers() {
        let tool = ToolSpec {
            name: CALL_MEMBER.into(),
            description: call_member_description(&[
                "coder".parse().unwrap(),
                "reviewer".parse().unwrap(),
            ]),
            input_schema: call_member_schema(),
        };
        let mut c = conv(vec![tool], vec![user("Build it.")]);
        let Reply::ToolCalls { calls, .. } = reply(&c) else {
            panic!("expected tool calls")
        };
        let members: Vec<_> = calls
            .iter()
            .map(|c| c.arguments["member"].clone())
            .collect();
        assert_eq!(members, ["coder", "reviewer"]);
        assert!(calls.iter().all(|c| c.arguments["task"] == "Build it."));
        c.messages.push(Message::Assistant {
            text: None,
            tool_calls: calls,
        });
        c.messages.push(Message::Tool {
            call_id: "call_1".into(),
            name: CALL_MEMBER.into(),
            output: "done\nall tests pass".into(),
            is_error: false,
        });
        c.messages.push(Message::Tool {
            call_id: "call_2".into(),
            name: CALL_MEMBER.into(),
            output: "member busy".into(),
            is_error: true,
        });
        let Reply::Answer {
            text: Some(text), ..
        } = reply(&c)
        else {
            panic!("expected an answer")
        };
        assert_eq!(
            text,
            "Answers for: Build it.\n\ncoder answered:\n> done\n> all tests pass\n\n\
             reviewer failed:\n> member busy\n"
        );
    }

    #[test]
    fn it_answers_from_the_members_answers_message() {
        use crate::fence::{self, Answer};
        use crate::trace::RecordedState;
        let tool = ToolSpec {
            name: CALL_MEMBER.into(),
            description: call_member_description(&["coder".parse().unwrap()]),
            input_schema: call_member_schema(),
        };
        let answers = fence::render(&[
            Answer {
                call_id: "call_1".into(),
                member: "coder".into(),
                member_task_id: Some("t7".into()),
                state: RecordedState::Completed,
                text: "Plan for: Build it.".into(),
            },
            Answer {
                call_id: "call_2".into(),
                member: "reviewer".into(),
                member_task_id: None,
                state: RecordedState::Failed,
                text: "still busy".into(),
            },
        ]);
        let c = conv(
            vec![tool],
            vec![
                user("Build it."),
                Message::Assistant {
                    text: Some("Answers for: Build it.".into()),
                    tool_calls: vec![],
                },
                user(&answers),
            ],
        );
        // It answers (no new calls), from the original task and the fenced answers.
        assert_eq!(
            reply(&c),
            Reply::Answer {
                text: Some(
                    "Answers for: Build it.\n\ncoder answered:\n> Plan for: Build it.\n\n\
                     reviewer failed:\n> still busy\n"
                        .into()
                ),
                artifacts: vec![]
            }
        );
    }
}
