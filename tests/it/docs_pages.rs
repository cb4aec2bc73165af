//! The docs hold together: every relative link in README.md and docs/ (docs/design/
//! too) names a file that exists, and the user pages (docs/*.md) name no spec the
//! repository lacks and keep no implementer section (those live in docs/design/).

use std::path::{Path, PathBuf};

use crate::env_docs::files_with;
use crate::support::{World, stderr, stdout};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The targets of the `[text](target)` links in `text`, without their `#anchor`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

fn pages() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    files_with(&root().join("docs"), "md", &mut files);
    files
}

#[test]
fn every_relative_link_names_a_file_that_exists() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for target in links(&text) {
            if !dir.join(&target).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(links("[a](b.md#c) [x](https://e.org) [d](../e.md)") == ["b.md", "../e.md"]);
}

/// A user page: README.md or docs/<page>.md (docs/design/ is for implementers).
fn user_pages() -> Vec<PathBuf> {
    pages()
        .into_iter()
        .filter(|p| p.parent() != Some(&root().join("docs/design")))
        .collect()
}

#[test]
fn user_pages_name_no_spec_the_repository_lacks_and_keep_no_implementer_section() {
    assert!(!Path::new(&root().join("roster-schema.txt")).exists());
    let pages = user_pages();
    assert!(pages.len() > 10, "{pages:?}");
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let lower = text.to_lowercase();
        for phrase in ["roster-schema", "the spec", "spec's", "spec §", "normative"] {
            assert!(
                !lower.contains(phrase),
                "{} names `{phrase}`: a spec the repository does not hold",
                page.display()
            );
        }
        assert!(
            !text.contains("## For implementers")
                && !text.contains("\nCode: ")
                && !text.contains("// crate::"),
            "{}: implementer notes belong in docs/design/",
            page.display()
        );
    }
}

/// The fenced blocks of `text` opened with "```<lang>".
pub(crate) fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&fence) {
        rest = &rest[at + fence.len()..];
        let end = rest.find("```").unwrap();
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

pub(crate) fn page(name: &str) -> String {
    std::fs::read_to_string(root().join("docs").join(name)).unwrap()
}

/// The value of the first `name:` line of a manifest.
pub(crate) fn name_of(manifest: &str) -> &str {
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("name: "))
        .unwrap()
        .trim()
}

/// The words of one line of a how-to's `sh` block, as sh splits them: quotes group,
/// `#` outside them starts a comment.
pub(crate) fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => (quote, started) = (Some(c), true),
            (None, '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// Runs a how-to's `sh` block as printed, from `dir`: `cd` moves, `&&` joins, every
/// other command is `mur` or `cargo` (a page's block holds nothing else this runs), each
/// but the last succeeding. The last one's output.
pub(crate) fn run_sh(w: &World, block: &str, mut dir: PathBuf) -> std::process::Output {
    let commands: Vec<Vec<String>> = block
        .lines()
        .map(words)
        .flat_map(|line| {
            line.split(|word| word == "&&")
                .map(<[String]>::to_vec)
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect();
    let mut last = None;
    for (i, line) in commands.iter().enumerate() {
        let mut cmd = match line[0].as_str() {
            "cd" => {
                dir = dir.join(&line[1]);
                continue;
            }
            // The system's programs only, as on a machine without pyenv: an
            // interpreter under the home (pyenv's shims here) is not readable by a
            // confined harness unless granted, as the process-harness page says.
            "mur" => {
                let mut cmd = w.mur_in(&dir);
                cmd.env("PATH", "/usr/bin:/bin");
                cmd
            }
            // The user's own cargo and home (its registry), offline: the crates a page
            // names are those components/ builds with, already on the machine. The
            // caller's flags and target folder are not the page's.
            "cargo" => {
                let mut cmd = std::process::Command::new("cargo");
                cmd.current_dir(&dir)
                    .env("CARGO_NET_OFFLINE", "true")
                    .env_remove("CARGO_TARGET_DIR")
                    .env_remove("CARGO_BUILD_TARGET")
                    .env_remove("RUSTFLAGS");
                cmd
            }
            other => panic!("a how-to's sh block runs `{other}`, which this test cannot"),
        };
        let out = cmd.args(&line[1..]).output().unwrap();
        assert!(
            i + 1 == commands.len() || out.status.success(),
            "{line:?}: {}",
            stderr(&out)
        );
        last = Some(out);
    }
    last.unwrap()
}

#[test]
fn the_process_harness_how_to_runs_as_written() {
    assert_eq!(
        words("mur run --task \"Hello, harness.\"  # a comment"),
        ["mur", "run", "--task", "Hello, harness."]
    );
    let text = page("howto-process-harness.md");
    let w = World::new();
    let manifest = &blocks(&text, "yaml")[0];
    let dir = w.proj.join(name_of(manifest));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(dir.join("harness.py"), &blocks(&text, "python")[0]).unwrap();
    let out = run_sh(&w, &blocks(&text, "sh")[0], w.proj.clone());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("capabilities.files.read: [\"~/.pyenv\"]"));
    let reversed: String = "Hello, harness.".chars().rev().collect();
    assert_eq!(stdout(&out), format!("completed\n{reversed}\n"));
    assert!(
        text.contains(&format!("`{reversed}`")),
        "the page shows what it prints"
    );
    assert!(
        stderr(&out).contains("warning[W-RUN-010]"),
        "{}",
        stderr(&out)
    );
}

/// "Call tools": the page's formation, its lead's `agent:` block and harness, and its
/// commands, as printed. call-member's result is a placeholder; the answer arrives as
/// a `reply` line after the harness's turn ends.
#[test]
fn the_process_harness_how_to_s_call_tools_run_in_a_formation() {
    let text = page("howto-process-harness.md");
    let sh = blocks(&text, "sh");
    assert_eq!(sh.len(), 3, "reverser, the formation, its run");
    let w = World::new();
    let made = run_sh(&w, &sh[1], w.proj.clone());
    assert!(made.status.success(), "{}", stderr(&made));
    let lead = w.proj.join("team/lead");
    let file = lead.join("murmur.yaml");
    let manifest = std::fs::read_to_string(&file).unwrap();
    // "put this `agent:` block in place of the one there"
    let at = manifest.find("\nagent:\n").unwrap() + 1;
    let end = at + manifest[at..].find("\n\n").unwrap() + 1;
    let agent = &blocks(&text, "yaml")[1];
    assert!(agent.starts_with("agent:\n"), "{agent}");
    let edited = format!("{}{agent}{}", &manifest[..at], &manifest[end..]);
    assert!(edited.contains("transport: process") && !edited.contains("transport: builtin"));
    std::fs::write(&file, edited).unwrap();
    std::fs::write(lead.join("harness.py"), &blocks(&text, "python")[1]).unwrap();
    let out = run_sh(&w, &sh[2], w.proj.clone());
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = stdout(&out);
    assert!(answer.starts_with("completed\n"), "{answer}");
    assert!(
        answer.contains("Answers from the members you called")
            && answer.contains("member:helper (completed, task tsk_"),
        "{answer}"
    );
    assert!(
        text.contains("`member:helper (completed, …)`"),
        "the page shows it"
    );
}

#[test]
fn the_concepts_page_defines_each_word_and_links_the_how_tos() {
    let text = page("concepts.md");
    for word in [
        "Capsule",
        "Artifact",
        "Store",
        "Roster",
        "Formation",
        "Member",
        "Entry",
        "Edge",
        "Session",
        "Door",
        "Operator token",
        "Lifeline",
        "Capabilities",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("**{word}"))),
            "concepts.md defines no `{word}`"
        );
    }
    for how_to in [
        "howto-local-model.md",
        "howto-process-harness.md",
        "howto-wasm-tool.md",
        "howto-door.md",
    ] {
        assert!(text.contains(&format!("]({how_to})")), "{how_to}");
    }
}

/// The user pages' inline code outside code blocks: what `code_paths_in_user_pages` reads.
fn inline_code(text: &str) -> Vec<String> {
    let mut prose = String::new();
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 0 {
            prose.push_str(part);
        }
    }
    prose
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, code)| code.to_string())
        .filter(|code| !code.contains('\n'))
        .collect()
}

/// User pages name no Rust paths of mur's code (`crate::…`, `records::start`): those are
/// docs/design/'s. Contributors' pages (testing, benchmarks) may.
#[test]
fn user_pages_name_no_code_paths() {
    for page in user_pages() {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        if name == "testing.md" || name == "benchmarks.md" {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for code in inline_code(&text) {
            let allowed = code.contains("[::1]") || code.contains("exports::murmur::capsule");
            assert!(
                allowed || !code.contains("::"),
                "{name} names `{code}`: a code path belongs in docs/design/"
            );
        }
    }
    assert_eq!(
        inline_code("a `x::y` b\n```\n`c::d`\n```\n`e`"),
        ["x::y", "e"]
    );
}

/// The door how-to, as printed, against a live formation: its `mur run --roster` (with
/// `--json`, to read the ids), its two `mur send` lines with the example ids replaced
/// by the live ones, and its curl block in bash, `ses=` set to the live session.
#[test]
fn the_door_how_to_s_commands_reach_a_live_formation() {
    let text = page("howto-door.md");
    let sh = blocks(&text, "sh");
    assert_eq!(sh.len(), 3, "run, send, curl");
    let run = words(sh[0].lines().nth(1).unwrap());
    assert_eq!(run, ["mur", "run", "--roster"]);
    let (w, project) = crate::first_hour::team();
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap();
    let helper = ready["members"][1]["session_id"].as_str().unwrap();
    let example_frm = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071";
    let example_ses = "ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081";
    let live = |block: &str| block.replace(example_frm, frm).replace(example_ses, helper);
    for line in live(&sh[1]).lines() {
        let out = w.mur().args(&words(line)[1..]).output().unwrap();
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        assert!(stderr(&out).contains(": completed"), "{}", stderr(&out));
        assert!(!stdout(&out).trim().is_empty(), "the answer on stdout");
    }
    let mur_dir = crate::support::clean::mur_built()
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!("{}:{}", mur_dir.display(), std::env::var("PATH").unwrap());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(live(&sh[2]))
        .env("HOME", &w.home)
        .env("PATH", path)
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.contains("team-helper"), "the Agent Card: {printed}");
    assert!(printed.contains("TASK_STATE_COMPLETED"), "{printed}");
    crate::support::ok(w.mur().args(["stop", frm]));
    assert_eq!(launcher.wait().unwrap().code(), Some(0));
}

/// A stand-in for ollama and llama-server: chat completions on 127.0.0.1, answering
/// `Parks.` (streamed when the request asks), recording each request's model.
async fn local_model() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use axum::response::IntoResponse;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let got = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let got = got.clone();
            async move {
                got.lock().unwrap().push(body["model"].as_str().unwrap_or("").to_string());
                if body["stream"] == true {
                    let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "Parks."}}]});
                    (
                        [("content-type", "text/event-stream")],
                        format!("data: {event}\n\ndata: [DONE]\n\n"),
                    )
                        .into_response()
                } else {
                    axum::Json(serde_json::json!({"choices": [{"index": 0, "message":
                        {"role": "assistant", "content": "Parks."}}]}))
                    .into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

/// The local-model how-to's manifests and its `mur run --task` block, as printed, with
/// `base_url`'s port replaced by a stand-in's (ollama and llama-server do not run here:
/// their own blocks are the one part of the page no test runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_how_to_s_capsules_answer_on_a_local_server() {
    let text = page("howto-local-model.md");
    let run = blocks(&text, "sh")
        .into_iter()
        .find(|b| b.starts_with("mur run --task"))
        .unwrap();
    let manifests = blocks(&text, "yaml");
    assert_eq!(manifests.len(), 2, "ollama and llama.cpp");
    for manifest in manifests {
        let w = World::new();
        let (addr, seen) = local_model().await;
        let port = manifest
            .split("base_url: \"http://127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap()
            .to_string();
        let dir = w.proj.join(name_of(&manifest));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("murmur.yaml"),
            manifest.replace(&format!("127.0.0.1:{port}/"), &format!("{addr}/")),
        )
        .unwrap();
        let (w, run, dir) = (std::sync::Arc::new(w), run.clone(), dir.clone());
        let ran = w.clone();
        let out = tokio::task::spawn_blocking(move || run_sh(&ran, &run, dir))
            .await
            .unwrap();
        assert!(out.status.success(), "{manifest}\n{}", stderr(&out));
        assert_eq!(stdout(&out), "completed\nParks.\n", "{manifest}");
        let model = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("model: "))
            .unwrap()
            .to_string();
        assert_eq!(*seen.lock().unwrap(), [model]);
    }
}
