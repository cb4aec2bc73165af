//! In a formation, a component gets MURMUR_FORMATION_PEERS and reaches a member at its
//! virtual address, through the runtime: the real door, the runtime's token and trust
//! stamp, nothing the component forged; other names under formation.invalid refused.

use super::*;
use mur::agent::{Tool, ToolCall};
use mur::call_member::Trust;
use mur::component::{Catalog, Grants, Host};
use mur::credential::FormationKey;

async fn probe(tool: &Arc<dyn Tool>, arguments: Value) -> (bool, String) {
    let call = ToolCall {
        id: "c".into(),
        name: "probe".into(),
        arguments,
    };
    let out = tool.call(&call).await;
    (out.is_error, out.output)
}

#[tokio::test]
async fn a_virtual_member_address_reaches_the_real_door_with_the_runtime_token() {
    let door = Web::start("the door answered");
    let key = FormationKey::mint().unwrap();
    let peers = crate::support::call_member::peers(
        &key,
        "planner",
        &[("coder", &format!("http://{}/", door.addr))],
        &["localhost"],
    );
    let w = World::new();
    let host = probe_host(&w, peers);
    let tools = host.tools(Trust::Trusted, None).await;
    let tool = &tools[0];

    let (err, env) = probe(tool, json!({"op": "env"})).await;
    assert!(!err);
    assert_eq!(
        env,
        "MURMUR_FORMATION_PEERS=coder=http://coder.formation.invalid\n"
    );

    let forged = json!([
        ["authorization", "Bearer forged"],
        ["x-murmur-task-trust", "untrusted"],
        ["x-murmur-call-chain", "coder=tsk_forged"]
    ]);
    let (err, said) = probe(
        tool,
        json!({"op": "request", "scheme": "http",
        "authority": "coder.formation.invalid", "path": "/a?b=c", "headers": forged}),
    )
    .await;
    assert!(!err, "{said}");
    assert_eq!(said, "200 the door answered");
    let heads = door.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /a?b=c http/1.1"), "{head}");
    let token = key.issue("planner", "coder").expose().to_ascii_lowercase();
    assert!(
        head.contains(&format!("authorization: bearer {token}")),
        "{head}"
    );
    // Neither the credential nor the wait chain a component sets reaches the door.
    assert!(!head.contains("forged"), "{head}");
    assert!(!head.contains("x-murmur-call-chain"), "{head}");
    assert!(head.contains("x-murmur-task-trust: trusted"), "{head}");
    // The door is told the virtual name, so what it answers names no real address.
    assert!(head.contains("host: coder.formation.invalid"), "{head}");

    for name in ["reviewer.formation.invalid", "formation.invalid"] {
        let (err, said) = probe(
            tool,
            json!({"op": "request", "scheme": "http",
            "authority": name, "path": "/"}),
        )
        .await;
        assert!(err && said.contains("HttpRequestDenied"), "{name}: {said}");
    }
    assert_eq!(door.connections(), 1);
}

/// A planner capsule holding the probe tool, its network reaching localhost, in a
/// formation where it may call `peers`' callees.
fn probe_host(w: &World, peers: Arc<mur::call_member::Peers>) -> Arc<Host> {
    let dir = w.path("capsule");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::copy(guest("test-probe"), dir.join("tools/probe.wasm")).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        format!(
            "name: planner\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
             capabilities:\n  network:\n    allow: [localhost]\n{}",
            tools_yaml(&[("probe", "tools/probe.wasm")])
        ),
    )
    .unwrap();
    let m = mur::manifest::load(&dir.join("murmur.yaml")).unwrap();
    let grants = Grants::of(&m, &w.proj, None).with_peers(Some(peers));
    Host::new(Catalog::open(&dir, &m).unwrap(), grants)
        .with_cache(Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache"))
}

/// murmur:message/send: the probe gives coder (a real door on the built-in model) a
/// task at its virtual address and gets the task as it ended; the trace's member_call
/// names the virtual address, never the door's; names it may not call get the one
/// refusal, before any connection.
#[tokio::test]
async fn message_send_reaches_a_member_at_its_virtual_address_and_waits_for_the_end() {
    use crate::support::call_member as cm;
    let key = FormationKey::mint().unwrap();
    let (door, work) = cm::door(&key, "coder", mur::door::Acceptance::Single).await;
    let w = World::new();
    let coder_trace = cm::trace(&w.path("."), "coder");
    tokio::spawn(cm::agent_runner(work, None, coder_trace));
    let real = door.url();
    let peers = cm::peers(&key, "planner", &[("coder", &real)], &["localhost"]);
    let trace = cm::trace(&w.path("."), "planner");
    let calls = cm::calls("t1", peers.clone(), Some(trace.clone()), Default::default());
    let host = probe_host(&w, peers);
    let tools = host.tools(Trust::Trusted, Some(calls.clone())).await;
    let tool = &tools[0];

    let (err, said) = probe(
        tool,
        json!({"op": "send", "url": "http://coder.formation.invalid", "text": "Say hello."}),
    )
    .await;
    assert!(!err, "{said}");
    let task: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(task["state"], "completed", "{said}");
    assert!(task["id"].as_str().is_some_and(|i| !i.is_empty()), "{said}");
    assert!(!task["text"].as_str().unwrap_or("").is_empty(), "{said}");
    // Answered to the component: nothing is owed to the task's turn end.
    assert!(!calls.owed());

    let text = std::fs::read_to_string(trace.path()).unwrap();
    let call = cm::records(&trace)
        .into_iter()
        .find_map(|r| match r.event {
            mur::trace::Event::MemberCall {
                member,
                peer_url,
                call_id,
                member_task_id,
                ..
            } => Some((member, peer_url, call_id, member_task_id)),
            _ => None,
        })
        .expect("a member_call record");
    assert_eq!(call.0, "coder");
    assert_eq!(call.1.as_deref(), Some("http://coder.formation.invalid"));
    assert_eq!(call.2, "c.send-1");
    assert_eq!(call.3.as_ref().map(|t| t.as_str()), task["id"].as_str());
    let authority = real.trim_start_matches("http://").trim_end_matches('/');
    assert!(
        !text.contains(authority),
        "the real door is in the trace: {text}"
    );
    cm::assert_no_token("the trace", &text);
    cm::assert_no_token("the component's view", &said);

    let refusal = |name: &str| {
        let tool = tool.clone();
        let name = name.to_string();
        async move {
            let (err, said) = probe(
                &tool,
                json!({"op": "send", "url": format!("http://{name}/"), "text": "x"}),
            )
            .await;
            assert!(err, "{name}: {said}");
            said.replace(&name, "<name>")
        }
    };
    let not_callable = refusal("reviewer.formation.invalid").await;
    assert_eq!(not_callable, refusal("nobody.formation.invalid").await);
    assert_eq!(not_callable, refusal("formation.invalid").await);
    assert!(
        not_callable.starts_with("there is no member `<name>` you may call; you may call: coder"),
        "{not_callable}"
    );
    let (err, said) = probe(tool, json!({"op": "send", "url": real, "text": "x"})).await;
    assert!(err && said.contains("virtual address"), "{said}");
}

/// A hook's murmur:message/send: coder's door runs the task; the hook's call is
/// recorded under the event's task, at the virtual address, call id `<event>.send-1`.
#[tokio::test]
async fn a_hook_sends_to_a_member_at_its_virtual_address() {
    use crate::support::call_member as cm;
    let key = FormationKey::mint().unwrap();
    let (door, work) = cm::door(&key, "coder", mur::door::Acceptance::Single).await;
    let w = World::new();
    let coder_trace = cm::trace(&w.path("."), "coder");
    tokio::spawn(cm::agent_runner(work, None, coder_trace.clone()));
    let peers = cm::peers(&key, "planner", &[("coder", &door.url())], &["localhost"]);
    let trace = cm::trace(&w.path("."), "planner");
    let dir = w.path("capsule");
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::copy(guest("test-hook"), dir.join("hooks/log.wasm")).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: planner\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
         capabilities:\n  network:\n    allow: [localhost]\n\
         hooks:\n  - event: task_received\n    path: hooks/log.wasm\n",
    )
    .unwrap();
    let m = mur::manifest::load(&dir.join("murmur.yaml")).unwrap();
    let grants = Grants::of(&m, &w.proj, None).with_peers(Some(peers));
    let host = Host::new(Catalog::open(&dir, &m).unwrap(), grants)
        .with_cache(Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache"))
        .with_trace(trace.clone());
    host.fire(
        mur::manifest::HookEvent::TaskReceived,
        json!({"task_id": "t7", "text": "hook-send"}),
    )
    .await
    .unwrap();
    let log = std::fs::read_to_string(w.proj.join("hooks.log")).unwrap();
    assert!(log.contains("\nsent completed "), "{log}");
    let call = cm::records(&trace)
        .into_iter()
        .find_map(|r| match r.event {
            mur::trace::Event::MemberCall {
                task_id,
                call_id,
                peer_url,
                ..
            } => Some((task_id, call_id, peer_url)),
            _ => None,
        })
        .expect("a member_call record");
    assert_eq!(call.0, "t7");
    assert_eq!(call.1, "task_received.send-1");
    assert_eq!(call.2.as_deref(), Some("http://coder.formation.invalid"));
    let answer = cm::records(&trace)
        .into_iter()
        .any(|r| matches!(r.event, mur::trace::Event::MemberAnswer { .. }));
    assert!(answer);
    // coder's door took the hook's call as untrusted (a hook runs for no task).
    let trust = cm::records(&coder_trace)
        .into_iter()
        .find_map(|r| match r.event {
            mur::trace::Event::A2aTaskReceived { trust, .. } => trust,
            _ => None,
        });
    assert_eq!(trust.as_deref(), Some("untrusted"));
}
