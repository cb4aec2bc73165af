//! The system prompt: the `[Capsule]` block (transport http only), then the
//! capsule's instructions, then the session's MURMUR.md.

/// What the system prompt is made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptParts {
    pub capsule_name: String,
    pub capsule_version: String,
    pub description: String,
    /// The member's roster name, in a formation.
    pub roster_name: Option<String>,
    /// The text of the manifest's `instructions` file.
    pub instructions: Option<String>,
    /// The text of the session's MURMUR.md.
    pub murmur_md: Option<String>,
    /// Whether to open with the `[Capsule]` block: true for `transport: http`.
    pub capsule_block: bool,
}

/// The system prompt, sections apart by one blank line:
///
/// ```text
/// [Capsule]
/// name: coder
/// version: 1.2.0
/// description: Writes and fixes code.
/// roster name: coder
///
/// <instructions>
///
/// <MURMUR.md>
/// ```
pub fn system_prompt(parts: &PromptParts) -> String {
    let mut sections = Vec::new();
    if parts.capsule_block {
        let mut block = format!(
            "[Capsule]\nname: {}\nversion: {}\ndescription: {}",
            parts.capsule_name,
            parts.capsule_version,
            one_line(&parts.description)
        );
        if let Some(name) = &parts.roster_name {
            block.push_str(&format!("\nroster name: {name}"));
        }
        sections.push(block);
    }
    for text in [&parts.instructions, &parts.murmur_md]
        .into_iter()
        .flatten()
    {
        let text = text.trim_end();
        if !text.trim().is_empty() {
            sections.push(text.to_string());
        }
    }
    let mut prompt = sections.join("\n\n");
    if !prompt.is_empty() {
        prompt.push('\n');
    }
    prompt
}

/// Folds line breaks so a field stays on its line of the block.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> PromptParts {
        PromptParts {
            capsule_name: "coder".into(),
            capsule_version: "1.2.0".into(),
            description: "Writes\ncode.".into(),
            roster_name: Some("back-end".into()),
            instructions: Some("# Coder\nBe brief.\n".into()),
            murmur_md: Some("# MURMUR.md\n".into()),
            capsule_block: true,
        }
    }

    #[test]
    fn capsule_block_comes_first_and_names_the_roster_name() {
        assert_eq!(
            system_prompt(&parts()),
            "[Capsule]\nname: coder\nversion: 1.2.0\ndescription: Writes code.\n\
             roster name: back-end\n\n# Coder\nBe brief.\n\n# MURMUR.md\n"
        );
    }

    #[test]
    fn no_block_off_http_and_no_roster_line_outside_a_formation() {
        let mut p = parts();
        p.capsule_block = false;
        assert_eq!(system_prompt(&p), "# Coder\nBe brief.\n\n# MURMUR.md\n");
        p.capsule_block = true;
        p.roster_name = None;
        p.instructions = None;
        assert_eq!(
            system_prompt(&p),
            "[Capsule]\nname: coder\nversion: 1.2.0\ndescription: Writes code.\n\n# MURMUR.md\n"
        );
    }
}
