//! The module graph is acyclic (docs/design/README.md, "Modules depend downward"):
//! among src/'s top-level modules, and among the submodules of each module folder.
//!
//! An edge `a → b` is a `crate::b` path in a file of module `a` (and, inside a module
//! folder, a `super::b` or `crate::<folder>::b` path between its files). Line comments
//! and a file's trailing `#[cfg(test)] mod tests { … }` are left out, as
//! ../shared/tools/modcycles.py reads them; unit-test files (`tests.rs`, `tests/`) are
//! read too, since a test's import is as much an edge as any.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code as the graph reads it: no line comments, no trailing test module.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(at)
            if text[at..]["#[cfg(test)]".len()..]
                .trim_start()
                .starts_with("mod tests {") =>
        {
            text[..at].to_string()
        }
        _ => text,
    };
    text.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first identifier of each path that follows a `prefix` in `code`: `x` for
/// `prefix x::…`, and each item's for a group, `prefix {x, y::z}`.
fn after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let ident = |s: &'a str| {
        let s = s.trim_start();
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    };
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(ident(rest));
            continue;
        };
        // The group's items at depth 0, each up to its comma.
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    out
}

/// The module a path names, relative to `root`: its first component without `.rs`.
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.strip_suffix(".rs").unwrap_or(&first).to_string()
}

fn is_module(root: &Path, name: &str) -> bool {
    root.join(format!("{name}.rs")).is_file() || root.join(name).is_dir()
}

/// The edges among the modules directly in `root`; `folder` is `root`'s path from
/// the crate (`None` for src/ itself).
fn graph(root: &Path, folder: Option<&str>) -> Graph {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut edges = Graph::new();
    for file in files {
        let rel = file.strip_prefix(root).unwrap();
        let from = module_of(rel);
        if ["main", "lib", "mod"].contains(&from.as_str()) {
            continue;
        }
        let code = code(&file);
        let mut targets: Vec<&str> = Vec::new();
        match folder {
            None => targets.extend(after(&code, "crate::")),
            Some(folder) => {
                targets.extend(after(&code, &format!("crate::{folder}::")));
                // `super::` from a file directly in the folder names a sibling; from
                // deeper, its own parent, which is the same module.
                if rel.components().count() == 1 {
                    targets.extend(after(&code, "super::"));
                }
            }
        }
        for to in targets {
            if to != from && is_module(root, to) {
                edges
                    .entry(from.clone())
                    .or_default()
                    .insert(to.to_string());
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(edges: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().rposition(|s| *s == v).unwrap();
                let comp: Vec<String> = self.stack.drain(at..).map(String::from).collect();
                if comp.len() > 1 {
                    self.out.push(
                        comp.into_iter()
                            .collect::<BTreeSet<_>>()
                            .into_iter()
                            .collect(),
                    );
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn src_s_top_level_modules_import_each_other_in_no_circle() {
    let edges = graph(&src(), None);
    assert!(
        edges.len() > 20,
        "the walk found too few modules: {edges:?}"
    );
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "modules that import each other in a circle (modules depend downward only): {found:?}"
    );
}

#[test]
fn the_submodules_of_each_module_folder_import_each_other_in_no_circle() {
    let mut found = Vec::new();
    for entry in fs::read_dir(src()).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let folder = entry.file_name().to_string_lossy().into_owned();
            for cycle in cycles(&graph(&path, Some(&folder))) {
                found.push(format!("{folder}: {}", cycle.join(" ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "submodules that import each other in a circle: {found:?}"
    );
}

#[test]
fn the_walk_finds_a_planted_circle() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.rs"), "use crate::b::X; // crate::c\n").unwrap();
    fs::write(dir.path().join("b.rs"), "use crate::{d, a::{g, h}};\n").unwrap();
    fs::write(
        dir.path().join("c.rs"),
        "fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::g;\n}\n",
    )
    .unwrap();
    let edges = graph(dir.path(), None);
    assert_eq!(cycles(&edges), vec![vec!["a".to_string(), "b".to_string()]]);
    assert!(
        !edges.contains_key("c"),
        "a trailing test module is no edge: {edges:?}"
    );
}
