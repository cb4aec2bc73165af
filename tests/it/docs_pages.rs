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
fn blocks(text: &str, lang: &str) -> Vec<String> {
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

fn page(name: &str) -> String {
    std::fs::read_to_string(root().join("docs").join(name)).unwrap()
}

/// The value of the first `name:` line of a manifest.
fn name_of(manifest: &str) -> &str {
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("name: "))
        .unwrap()
        .trim()
}

#[test]
fn the_local_model_how_to_s_manifests_are_accepted() {
    let w = World::new();
    let manifests = blocks(&page("howto-local-model.md"), "yaml");
    assert_eq!(manifests.len(), 2, "ollama and llama.cpp");
    for manifest in &manifests {
        assert!(
            manifest.contains("transport: http")
                && manifest.contains("base_url: \"http://127.0.0.1:")
        );
        let dir = w.proj.join(name_of(manifest));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
        let out = w
            .mur()
            .args(["pack"])
            .arg(&dir)
            .args(["--out", "dist"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{manifest}\n{}", stderr(&out));
    }
}

#[test]
fn the_process_harness_how_to_runs_as_written() {
    let text = page("howto-process-harness.md");
    let w = World::new();
    let manifest = &blocks(&text, "yaml")[0];
    let dir = w.proj.join(name_of(manifest));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(dir.join("harness.py"), &blocks(&text, "python")[0]).unwrap();
    let task = "Hello, harness.";
    assert!(text.contains(&format!("mur run --task \"{task}\"")));
    // The system's python3, as on a machine without pyenv: an interpreter under the
    // home (pyenv's shims here) is not readable by a confined harness unless granted,
    // as the page says.
    let out = w
        .mur_in(&dir)
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "--task", task])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("capabilities.files.read: [\"~/.pyenv\"]"));
    let reversed: String = task.chars().rev().collect();
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

#[test]
fn the_wasm_tool_how_to_s_capsule_and_command_run() {
    let text = page("howto-wasm-tool.md");
    let w = World::new();
    let manifest = &blocks(&text, "yaml")[0];
    let dir = w.proj.join(name_of(manifest));
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    // The echo tool stands in for the page's shout: the same world, the text unchanged.
    std::fs::copy(
        crate::support::guests::guest("tool-echo"),
        dir.join("tools/shout.wasm"),
    )
    .unwrap();
    let command = blocks(&text, "sh")
        .iter()
        .flat_map(|b| b.lines().map(str::to_string).collect::<Vec<_>>())
        .find(|l| l.starts_with("mur run --task '"))
        .unwrap();
    let task = command
        .trim_start_matches("mur run --task '")
        .trim_end_matches('\'');
    let out = w
        .mur_in(&dir)
        .args(["run", "--task", task])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = &blocks(&text, "text")[0];
    assert_eq!(stdout(&out), shown.replace("HELLO, TOOL", "hello, tool"));
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
