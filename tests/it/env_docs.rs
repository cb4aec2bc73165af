//! The environment variables of `src/env.rs` are the ones the docs list and the only
//! ones the code names. docs/environment.md is generated from it; set MUR_UPDATE_DOCS=1
//! to rewrite it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mur::env::{self, Use};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

/// Every `MURMUR_…`/`MUR_TEST_…` name in `text` (not a bare prefix like `MURMUR_*`).
fn names_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in ["MURMUR_", "MUR_TEST_"] {
        for (at, _) in text.match_indices(prefix) {
            if text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.ends_with('_') {
                found.insert(name);
            }
        }
    }
    found
}

/// The lines of the first Markdown table after the line holding `heading`.
fn table_after<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.contains(heading))
        .skip(1)
        .map(str::trim)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect()
}

/// The backquoted first cell of each row (`| \`NAME=…\` | …` gives NAME).
fn first_cells(rows: &[&str]) -> BTreeSet<String> {
    rows.iter()
        .filter_map(|r| r.strip_prefix("| `"))
        .map(|r| {
            r.chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

fn of(used: Use) -> BTreeSet<String> {
    env::names(used).into_iter().map(String::from).collect()
}

#[test]
fn docs_environment_md_is_the_registry() {
    let generated = env::markdown();
    let path = root().join("docs/environment.md");
    if std::env::var_os(env::MUR_UPDATE_DOCS).is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/environment.md is stale: run `MUR_UPDATE_DOCS=1 cargo test --test it env_docs`"
    );
}

#[test]
fn the_test_settings_table_is_the_registrys() {
    let text = read("docs/testing.md");
    let rows = table_after(&text, "## Test settings");
    assert_eq!(first_cells(&rows), of(Use::Test));
}

#[test]
fn what_a_member_inherits_is_what_the_launcher_sets() {
    let text = read("docs/formation.md");
    let rows = table_after(&text, "## What a member inherits");
    assert_eq!(names_in(&rows.join("\n")), of(Use::Member));
}

#[test]
fn the_harness_table_is_what_a_session_sets() {
    let text = read("docs/agent.md");
    let rows = table_after(&text, "What a session passes a harness:");
    let mut want = of(Use::Harness);
    want.insert(env::HOME.to_string());
    assert_eq!(first_cells(&rows), want);
}

/// The files under `dir` (its subfolders too) whose name ends in `.<ext>`.
pub fn files_with(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_with(&path, ext, out);
        } else if path.extension().is_some_and(|x| x == ext) {
            out.push(path);
        }
    }
}

/// No variable is named in src/ or docs/ (docs/design/ too) that the registry does not list.
#[test]
fn the_code_and_docs_name_no_variable_outside_the_registry() {
    let known: BTreeSet<String> = env::ALL.iter().map(|v| v.name.to_string()).collect();
    let mut files = Vec::new();
    files_with(&root().join("src"), "rs", &mut files);
    files_with(&root().join("docs"), "md", &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests make names up to show they are not passed on.
        let name = file.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap();
        for name in names_in(code) {
            assert!(
                known.contains(&name),
                "{} names {name}, which src/env.rs does not list",
                file.display()
            );
        }
    }
}
