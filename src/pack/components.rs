//! What `mur pack` and `mur install` check of the files murmur.yaml names: every
//! `tools[].path`, `hooks[].path` and `agent.driver` is a file the capsule holds
//! (E-MAN-007, at its line), and each is a component of its world (E-CMP-001,
//! E-CMP-002).

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use zip::ZipArchive;

use crate::catalogue::E_MAN_007;
use crate::component::check::{World, check};
use crate::diag::{Diagnostic, Location, Result};
use crate::manifest::{self, Manifest};

pub(super) fn check_named<R: Read + Seek>(
    archive: &mut ZipArchive<R>,
    m: &Manifest,
    shown: &Path,
) -> Result<()> {
    let mut named: Vec<(&str, &str, World)> = Vec::new();
    if let manifest::Transport::Http(h) = &m.agent.transport
        && let Some(driver) = &h.driver
    {
        named.push(("driver", driver, World::Driver));
    }
    named.extend(
        m.tools
            .iter()
            .map(|t| ("path", t.path.as_str(), World::Tool)),
    );
    named.extend(
        m.hooks
            .iter()
            .map(|h| ("path", h.path.as_str(), World::Hook)),
    );
    if named.is_empty() {
        return Ok(());
    }
    let inner = PathBuf::from(format!("{}!{}", shown.display(), manifest::FILE_NAME));
    let text = entry(archive, manifest::FILE_NAME).unwrap_or_default();
    for (key, rel, world) in named {
        let name = rel.trim_start_matches("./");
        let Some(bytes) = entry(archive, name) else {
            let d = Diagnostic::new(
                E_MAN_007,
                format!("murmur.yaml names `{rel}`, a file the capsule does not hold"),
            );
            let held: Vec<String> = archive
                .file_names()
                .filter_map(|n| n.ok().map(|n| n.into_owned()))
                .collect();
            let mut d = d.hint(match crate::diag::closest(name, held.iter().map(String::as_str)) {
                Some(guess) => format!(
                    "Did you mean `{guess}`? Or add {rel} to the capsule folder (build it first)."
                ),
                None => format!("Add {rel} to the capsule folder (build it first), or fix the path."),
            });
            d = match line_of(&String::from_utf8_lossy(&text), key, rel) {
                Some((line, column)) => d.at(Location::new(&inner, line, column)),
                None => d.in_file(&inner),
            };
            return Err(d);
        };
        check(
            &bytes,
            &PathBuf::from(format!("{}!{name}", shown.display())),
            world,
        )?;
    }
    Ok(())
}

/// The bytes of the archive's file `name` (None when it holds no such file). The
/// archive's entries were checked against their declared sizes before.
fn entry<R: Read + Seek>(archive: &mut ZipArchive<R>, name: &str) -> Option<Vec<u8>> {
    let mut e = archive.by_name(name).ok().filter(|e| e.is_file())?;
    let mut bytes = Vec::new();
    e.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The line and column (1-based) of the first `key: value` line whose value is `value`
/// (a list item's `- key:` too; quoted or not).
pub(super) fn line_of(text: &str, key: &str, value: &str) -> Option<(usize, usize)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let t = line.trim_start().trim_start_matches("- ").trim_start();
        let rest = t.strip_prefix(key)?.trim_start().strip_prefix(':')?;
        let v = rest.trim().trim_matches(|c| c == '"' || c == '\'');
        (v == value).then(|| (i + 1, line.find(value).map_or(1, |c| c + 1)))
    })
}

#[cfg(test)]
mod tests {
    use super::line_of;

    #[test]
    fn a_named_path_is_found_at_its_line_and_column() {
        let text =
            "name: x\ntools:\n  - name: a\n    path: tools/a.wasm\n  - path: 'tools/b.wasm'\n";
        assert_eq!(line_of(text, "path", "tools/a.wasm"), Some((4, 11)));
        assert_eq!(line_of(text, "path", "tools/b.wasm"), Some((5, 12)));
        assert_eq!(line_of(text, "path", "tools/c.wasm"), None);
    }
}
