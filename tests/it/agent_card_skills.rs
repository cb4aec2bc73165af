//! The Agent Card's skills: declared in murmur.yaml (read strictly), else one default
//! made from the capsule's description; checked on a real `mur run` session's card
//! and read back with the official A2A types (a2a-lf).

use std::path::Path;
use std::time::Duration;

use crate::support::World;
use crate::support::session::*;
use a2a as lf; // the a2a-lf crate
use nix::sys::signal::Signal;
use serde_json::{Value, json};

const SKILLS: &str = "skills:
  - id: review
    name: Review code
    description: Reads a diff and says what is wrong with it.
    tags: [code, review]
    examples:
      - Review this patch
  - id: summarise
    name: Summarise
    description: Writes a short summary.
";

/// The card of a session of `local/<name>`, raw and as a2a-lf reads it.
fn card_of(w: &World, name: &str) -> (Value, lf::AgentCard) {
    let mut cmd = w.run(name);
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    let ready = s.ready();
    let door = ready["door"]
        .as_str()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let raw: Value = rt.block_on(async {
        mur::door::client()
            .build()
            .unwrap()
            .get(format!("{door}/.well-known/agent-card.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    s.signal(Signal::SIGTERM);
    let (code, stderr) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let card: lf::AgentCard =
        serde_json::from_value(raw.clone()).expect("a2a-lf reads the Agent Card");
    (raw, card)
}

#[test]
fn declared_skills_are_on_the_card_in_the_a2a_shape() {
    let w = World::new();
    w.install("coder", SKILLS, None);
    let (raw, card) = card_of(&w, "coder");
    assert_eq!(
        raw["skills"],
        json!([
            {"id": "review", "name": "Review code",
             "description": "Reads a diff and says what is wrong with it.",
             "tags": ["code", "review"], "examples": ["Review this patch"]},
            {"id": "summarise", "name": "Summarise",
             "description": "Writes a short summary.", "tags": []},
        ])
    );
    assert_eq!(card.skills.len(), 2);
    assert_eq!(card.skills[0].id, "review");
    assert_eq!(
        card.skills[0].examples.as_deref(),
        Some(&["Review this patch".to_string()][..])
    );
}

#[test]
fn with_no_skills_declared_the_card_has_one_made_from_the_description() {
    let w = World::new();
    w.install("plain", "", None);
    let (raw, card) = card_of(&w, "plain");
    assert_eq!(
        raw["skills"],
        json!([{"id": "plain", "name": "plain", "description": "A test capsule.", "tags": ["plain"]}])
    );
    assert_eq!(card.skills[0].description, "A test capsule.");
}

/// Each refusal of `skills`, with its code and the line and column at fault.
#[test]
fn skills_are_read_strictly() {
    let head = "name: app\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n";
    let cases: &[(&str, &str, (usize, usize))] = &[
        // An unknown key in a skill.
        (
            "skills:\n  - id: a\n    name: A\n    description: d\n    input_modes: [text]\n",
            "E-MAN-001",
            (10, 5),
        ),
        // A skill without its description.
        ("skills:\n  - id: a\n    name: A\n", "E-MAN-001", (7, 5)),
        // An id that is not a plain word.
        (
            "skills:\n  - id: Review Code\n    name: A\n    description: d\n",
            "E-MAN-004",
            (7, 9),
        ),
        // Two skills with one id.
        (
            "skills:\n  - {id: a, name: A, description: d}\n  - {id: a, name: B, description: e}\n",
            "E-MAN-010",
            (8, 10),
        ),
        // A blank tag, and tags that are not a list.
        (
            "skills:\n  - {id: a, name: A, description: d, tags: [x, \" \"]}\n",
            "E-MAN-001",
            (7, 48),
        ),
        (
            "skills:\n  - {id: a, name: A, description: d, tags: code}\n",
            "E-MAN-001",
            (7, 44),
        ),
        ("skills: {}\n", "E-MAN-001", (6, 9)),
    ];
    for (skills, code, at) in cases {
        let text = format!("{head}{skills}");
        let err = mur::manifest::parse(&text, Path::new("murmur.yaml"))
            .expect_err(&format!("refused:\n{text}"));
        assert_eq!(err.code.as_str(), *code, "{err}\n{text}");
        let loc = err.location.as_ref().expect("a line and column");
        assert_eq!((loc.line, loc.column), *at, "{err}\n{text}");
        assert!(!err.hint_text().is_empty(), "{err}");
    }
}
