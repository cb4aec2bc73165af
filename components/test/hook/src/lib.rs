//! A hook for the tests: appends `<event> <record>` to `hooks.log` in the work folder,
//! and refuses a before_tool call whose record mentions `refuse-me`. A record that
//! mentions `hook-send` makes it give coder work (murmur:message/send at coder's
//! virtual address) and log `sent <state> <text>` or `send refused <why>`.

wit_bindgen::generate!({ world: "hook-component", path: "../../../wit", generate_all });

use std::io::Write;

struct Hook;

impl exports::murmur::capsule::hook::Guest for Hook {
    fn handle(event: String, record: String) -> Result<(), String> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open("hooks.log")
            .map_err(|e| format!("hooks.log: {e}"))?;
        // One write per line: hooks running side by side append whole lines.
        log.write_all(format!("{event} {record}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        if event == "before_tool" && record.contains("refuse-me") {
            return Err("the hook refuses arguments that say refuse-me".to_string());
        }
        if record.contains("hook-send") {
            let line = match murmur::message::send::send(
                "http://coder.formation.invalid",
                "Sent from a hook.",
            ) {
                Ok(task) => format!("sent {} {}\n", task.state, task.text.replace('\n', " ")),
                Err(e) => format!("send refused {e}\n"),
            };
            log.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
        }
        if record.contains("hook-spin") {
            #[allow(clippy::empty_loop)]
            loop {}
        }
        Ok(())
    }
}

export!(Hook);
