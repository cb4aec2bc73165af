//! `write-file {"path","text"}`: writes the text; paths are relative to the work folder.
use toolkit::{Guest, Output, error, ok};

struct WriteFile;

impl Guest for WriteFile {
    fn schema() -> String {
        toolkit::schema(&[
            ("path", "The file, relative to the work folder."),
            ("text", "What the file is to hold."),
        ])
    }

    fn call(arguments: String) -> Output {
        let (path, text) = match (
            toolkit::arg(&arguments, "path"),
            toolkit::arg(&arguments, "text"),
        ) {
            (Ok(p), Ok(t)) => (p, t),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        match std::fs::write(&path, &text) {
            Ok(()) => ok(format!("wrote {} bytes to {path}", text.len())),
            Err(e) => error(format!("cannot write {path}: {e}")),
        }
    }
}

toolkit::export!(WriteFile);
