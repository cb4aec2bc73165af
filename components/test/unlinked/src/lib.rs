//! A tool that imports `test:odd/missing`, which no host provides: it cannot be linked.

wit_bindgen::generate!({ world: "test:odd/odd-tool", path: ["../../../wit", "wit"], generate_all });

use exports::murmur::capsule::tool::{Guest, Output};

struct Odd;

impl Guest for Odd {
    fn schema() -> String {
        r#"{"type":"object"}"#.to_string()
    }

    fn call(_arguments: String) -> Output {
        test::odd::missing::nothing();
        Output {
            content: "linked after all".to_string(),
            is_error: false,
        }
    }
}

export!(Odd);
