//! `echo {"text"}`: returns the text.
use toolkit::{Guest, Output, arg, ok, schema};

struct Echo;

impl Guest for Echo {
    fn schema() -> String {
        schema(&[("text", "The text to return.")])
    }

    fn call(arguments: String) -> Output {
        match arg(&arguments, "text") {
            Ok(text) => ok(text),
            Err(e) => e,
        }
    }
}

toolkit::export!(Echo);
