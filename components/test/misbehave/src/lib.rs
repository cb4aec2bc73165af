//! A tool for the tests that misbehaves as told: `{"do": "trap" | "loop" | "grow"}`.
use toolkit::{Guest, Output, arg, ok};

struct Misbehave;

impl Guest for Misbehave {
    fn schema() -> String {
        toolkit::schema(&[("do", "trap, loop or grow")])
    }

    fn call(arguments: String) -> Output {
        let what = match arg(&arguments, "do") {
            Ok(w) => w,
            Err(e) => return e,
        };
        match what.as_str() {
            "trap" => core::arch::wasm32::unreachable(),
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "grow" => {
                let mut held: Vec<Vec<u8>> = Vec::new();
                loop {
                    held.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&held);
                }
            }
            other => ok(format!("nothing to do for {other}")),
        }
    }
}

toolkit::export!(Misbehave);
