//! `skills[]`: what the capsule offers callers, shown on its Agent Card as A2A
//! AgentSkills. Strict like the rest of the manifest.

use std::collections::HashMap;

use super::{checked, entries, non_blank, unique};
use crate::catalogue::E_MAN_004;
use crate::diag::Result;
use crate::manifest::{Skill, rules};
use crate::yaml::{Map, Reader};

const KEYS: &[&str] = &["id", "name", "description", "tags", "examples"];

pub(in crate::manifest) fn skills(r: &Reader, m: &Map<'_>) -> Result<Vec<Skill>> {
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for s in entries(r, m, "skills", KEYS)? {
        let id_node = r.required(&s, "id", "skills[].id")?;
        let id = checked(r, id_node, "skills[].id", E_MAN_004, rules::tool_name)?;
        unique(r, &mut seen, &id, id_node, "skills[].id")?;
        let name = non_blank(r, r.required(&s, "name", "skills[].name")?, "skills[].name")?;
        let description = non_blank(
            r,
            r.required(&s, "description", "skills[].description")?,
            "skills[].description",
        )?;
        let texts = |key: &str| -> Result<Vec<String>> {
            let field = format!("skills[].{key}");
            let Some(node) = s.get(key) else {
                return Ok(Vec::new());
            };
            let item_field = format!("{field}[]");
            r.seq(node, &field)?
                .iter()
                .map(|item| non_blank(r, item, &item_field))
                .collect()
        };
        out.push(Skill {
            id,
            name,
            description,
            tags: texts("tags")?,
            examples: texts("examples")?,
        });
    }
    Ok(out)
}
