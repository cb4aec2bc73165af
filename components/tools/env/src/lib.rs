//! `env {"name"}`: the value of an environment variable the capsule was granted
//! (`capabilities.env.allow`), or an error.
use toolkit::{Guest, Output, arg, error, ok, schema};

struct Env;

impl Guest for Env {
    fn schema() -> String {
        schema(&[("name", "The environment variable's name.")])
    }

    fn call(arguments: String) -> Output {
        let name = match arg(&arguments, "name") {
            Ok(n) => n,
            Err(e) => return e,
        };
        match std::env::var(&name) {
            Ok(value) => ok(value),
            Err(_) => error(format!("{name} is not set")),
        }
    }
}

toolkit::export!(Env);
