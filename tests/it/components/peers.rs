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
    let host = Host::new(Catalog::open(&dir, &m).unwrap(), grants)
        .with_cache(Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache"));
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
        ["x-murmur-task-trust", "untrusted"]
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
    assert!(!head.contains("forged"), "{head}");
    assert!(head.contains("x-murmur-task-trust: trusted"), "{head}");
    assert!(head.contains(&format!("host: {}", door.addr)), "{head}");

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
