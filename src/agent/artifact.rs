//! What a completed task hands back besides its message: artifacts made of parts,
//! in the A2A 1.0 shape (`{"text":…}`, `{"data":…}`, `{"raw":<base64>,"filename":…,
//! "mediaType":…}`, `{"url":…}`), so a process harness writes what a door serves.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

/// One output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task; made up (`art_<uuidv7>`) when the harness gives none.
    #[serde(default = "new_artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
}

impl Artifact {
    /// An artifact of one text part.
    pub fn text(name: &str, text: impl Into<String>) -> Self {
        Artifact {
            artifact_id: new_artifact_id(),
            name: Some(name.to_string()),
            description: None,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// What to call it when showing it: its name, else its id.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.artifact_id)
    }
}

fn new_artifact_id() -> String {
    format!("art_{}", uuid::Uuid::now_v7().simple())
}

/// One piece of content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PartWire", into = "PartWire")]
pub enum Part {
    Text(String),
    /// Any JSON value.
    Data(serde_json::Value),
    File {
        filename: Option<String>,
        media_type: Option<String>,
        content: FileContent,
    },
}

/// A file part's bytes, or where to fetch them.
#[derive(Debug, Clone, PartialEq)]
pub enum FileContent {
    Bytes(Vec<u8>),
    Url(String),
}

/// The wire shape: exactly one of `text`, `raw`, `url`, `data`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PartWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<serde_json::Value>,
}

impl TryFrom<PartWire> for Part {
    type Error = String;
    fn try_from(w: PartWire) -> Result<Self, String> {
        let file = |content| Part::File {
            filename: w.filename.clone(),
            media_type: w.media_type.clone(),
            content,
        };
        match (w.text.clone(), w.raw.clone(), w.url.clone(), w.data.clone()) {
            (Some(text), None, None, None) => Ok(Part::Text(text)),
            (None, Some(raw), None, None) => BASE64
                .decode(raw.as_bytes())
                .map(|bytes| file(FileContent::Bytes(bytes)))
                .map_err(|e| format!("a part's `raw` is not base64: {e}")),
            (None, None, Some(url), None) => Ok(file(FileContent::Url(url))),
            (None, None, None, Some(data)) => Ok(Part::Data(data)),
            _ => Err("a part holds exactly one of `text`, `raw`, `url` or `data`".to_string()),
        }
    }
}

impl From<Part> for PartWire {
    fn from(p: Part) -> Self {
        match p {
            Part::Text(text) => PartWire {
                text: Some(text),
                ..Default::default()
            },
            Part::Data(data) => PartWire {
                data: Some(data),
                ..Default::default()
            },
            Part::File {
                filename,
                media_type,
                content,
            } => {
                let (raw, url) = match content {
                    FileContent::Bytes(b) => (Some(BASE64.encode(b)), None),
                    FileContent::Url(u) => (None, Some(u)),
                };
                PartWire {
                    raw,
                    url,
                    filename,
                    media_type,
                    ..Default::default()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_read_and_write_the_a2a_shape() {
        let cases = [
            json!({"text": "hi"}),
            json!({"data": {"n": 1}}),
            json!({"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}),
            json!({"url": "https://example.invalid/a.png", "mediaType": "image/png"}),
        ];
        for wire in cases {
            let part: Part = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(serde_json::to_value(&part).unwrap(), wire);
        }
        let part: Part = serde_json::from_value(json!({"raw": "aGVsbG8="})).unwrap();
        assert!(
            matches!(part, Part::File { content: FileContent::Bytes(ref b), .. } if b == b"hello")
        );
    }

    #[test]
    fn a_part_with_two_contents_or_none_is_refused() {
        for wire in [
            json!({"text": "a", "data": 1}),
            json!({"filename": "x"}),
            json!({"raw": "%%"}),
        ] {
            assert!(
                serde_json::from_value::<Part>(wire.clone()).is_err(),
                "{wire}"
            );
        }
    }

    #[test]
    fn an_artifact_without_id_gets_one() {
        let a: Artifact = serde_json::from_value(json!({"parts": [{"text": "x"}]})).unwrap();
        assert!(a.artifact_id.starts_with("art_"));
        assert_eq!(a.label(), a.artifact_id);
    }
}
