//! The files `mur new` writes, as (relative path, text) pairs. Every murmur.yaml
//! here parses as written; the tests hold them to it.

/// A single capsule: `murmur.yaml` and `INSTRUCTIONS.md`.
pub(super) fn capsule(name: &str) -> Vec<(String, String)> {
    vec![
        (
            "murmur.yaml".into(),
            format!(
                "\
# The manifest of the capsule `{name}`. Every field is described in mur's docs/manifest.md.
name: {name}
version: 0.1.0
description: The {name} capsule, scaffolded by `mur new`.
instructions: INSTRUCTIONS.md

agent:
  # The built-in offline model: runs with no API key and no network.
  # To use a real model, write for example:
  #   transport: http
  #   base_url: \"http://127.0.0.1:11434/v1\"
  #   model: llama3
  transport: builtin

inference:
  max_turns: 8

lifecycle:
  task_acceptance: single
  after_task: sleep
"
            ),
        ),
        (
            "INSTRUCTIONS.md".into(),
            instructions(name, "Answer the task you are given, briefly and exactly."),
        ),
    ]
}

/// A roster folder: `roster.yaml`, `README.md`, and the source folders `lead/`
/// (the entry member, which calls `helper`) and `helper/`.
pub(super) fn roster(name: &str) -> Vec<(String, String)> {
    vec![
        (
            "roster.yaml".into(),
            format!(
                "\
# The formation `{name}`: `lead` takes the task and may call `helper`.
roster_version: 1
members:
  - name: lead
    capsule: local/{name}-lead
    version: 0.1.0
    entry: true
  - name: helper
    capsule: local/{name}-helper
    version: 0.1.0
reachability:
  - from: lead
    to: [helper]
"
            ),
        ),
        ("README.md".into(), readme(name)),
        (
            "lead/murmur.yaml".into(),
            member(
                &format!("{name}-lead"),
                "The entry member of the formation. It splits the task and hands parts to `helper`.",
                "",
                "\
capabilities:
  network:
    # The member's callees answer at doors on 127.0.0.1.
    allow:
      - localhost
",
            ),
        ),
        (
            "lead/INSTRUCTIONS.md".into(),
            instructions(
                &format!("{name}-lead"),
                "You lead the formation. Split the task, give each part to `helper` with the call-member tool, and answer from what comes back.",
            ),
        ),
        (
            "helper/murmur.yaml".into(),
            member(
                &format!("{name}-helper"),
                "A peer of the formation. It does the parts of the task `lead` hands it.",
                "\
exports:
  peer_tasks:
    # Takes tasks from the formation's other members.
    accept: true

",
                "",
            ),
        ),
        (
            "helper/INSTRUCTIONS.md".into(),
            instructions(
                &format!("{name}-helper"),
                "You help `lead`. Do the part of the task you are given, and answer with the result only.",
            ),
        ),
    ]
}

/// A formation member's murmur.yaml: every member of a roster with an edge must
/// declare network.authentication.
fn member(capsule: &str, description: &str, exports: &str, capabilities: &str) -> String {
    format!(
        "\
# The manifest of the capsule `{capsule}`. Every field is described in mur's docs/manifest.md.
name: {capsule}
version: 0.1.0
description: {description}
instructions: INSTRUCTIONS.md

agent:
  # The built-in offline model: runs with no API key and no network.
  transport: builtin

inference:
  max_turns: 8

{exports}network:
  # Required of every member of a roster with an edge. Empty: the door accepts
  # only the session's operator token and the formation's tokens.
  authentication: {{}}
{capabilities_sep}{capabilities}",
        capabilities_sep = if capabilities.is_empty() { "" } else { "\n" },
    )
}

fn instructions(capsule: &str, body: &str) -> String {
    format!("# {capsule}\n\n{body}\n")
}

fn readme(name: &str) -> String {
    format!(
        "\
# {name}

A formation of two members, scaffolded by `mur new --roster {name}`:

- `lead` (capsule `local/{name}-lead`, source in `lead/`) is the entry member: it takes
  the formation's task and may call `helper`.
- `helper` (capsule `local/{name}-helper`, source in `helper/`) takes the parts `lead`
  hands it.

Both run the built-in offline model, so they need no API key and no network.

## Install the members

From this folder, install both members from their source folders:

    mur install lead helper

## Run the formation

    mur run --roster --task \"Say hello\"

`roster.yaml` says who runs and who may call whom; each member's `murmur.yaml` says
what that capsule may do.
"
    )
}
