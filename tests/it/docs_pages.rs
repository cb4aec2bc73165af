//! The docs hold together: every relative link in README.md and docs/ (docs/design/
//! too) names a file that exists, and the user pages (docs/*.md) name no spec the
//! repository lacks and keep no implementer section (those live in docs/design/).

use std::path::{Path, PathBuf};

use crate::env_docs::files_with;

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
            !text.contains("## For implementers") && !text.contains("\nCode: "),
            "{}: implementer notes belong in docs/design/",
            page.display()
        );
    }
}
