//! `read-file {"path"}`: a file's text; paths are relative to the work folder.
use toolkit::{Guest, Output, arg, error, ok, schema};

struct ReadFile;

impl Guest for ReadFile {
    fn schema() -> String {
        schema(&[("path", "The file, relative to the work folder.")])
    }

    fn call(arguments: String) -> Output {
        let path = match arg(&arguments, "path") {
            Ok(p) => p,
            Err(e) => return e,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => ok(text),
            Err(e) => error(format!("cannot read {path}: {e}")),
        }
    }
}

toolkit::export!(ReadFile);
