//! What can be told of a component without compiling it: that the file is a
//! component (not a core module) and that it exports its world's interface. `mur pack`,
//! `mur install` and session start use it; wasmtime type-checks the rest at load.

use std::path::Path;

use crate::catalogue::{E_CMP_001, E_CMP_002};
use crate::diag::Diagnostic;

/// Which world a component's place in murmur.yaml asks of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    Tool,
    Hook,
    /// `agent.driver`: a model driver.
    Driver,
}

impl World {
    /// The interface the component must export.
    pub fn export(self) -> &'static str {
        match self {
            World::Tool => "murmur:capsule/tool@0.1.0",
            World::Hook => "murmur:capsule/hook@0.1.0",
            World::Driver => "murmur:capsule/driver@0.1.0",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            World::Tool => "tool-component",
            World::Hook => "hook-component",
            World::Driver => "driver-component",
        }
    }

    /// What murmur.yaml calls a component of this world.
    fn kind(self) -> &'static str {
        match self {
            World::Tool => "tool",
            World::Hook => "hook",
            World::Driver => "model driver",
        }
    }
}

/// Refuses `bytes` (the file at `path`, for the message) unless they are a component
/// exporting `world`'s interface.
pub fn check(bytes: &[u8], path: &Path, world: World) -> Result<(), Diagnostic> {
    let shown = path.display();
    if wasmparser::Parser::is_core_wasm(bytes) {
        return Err(Diagnostic::new(
            E_CMP_001,
            format!("{shown} is a core WebAssembly module, not a component"),
        )
        .in_file(path));
    }
    if !wasmparser::Parser::is_component(bytes) {
        return Err(
            Diagnostic::new(E_CMP_001, format!("{shown} is not a WebAssembly component"))
                .in_file(path),
        );
    }
    let exports = top_level_exports(bytes).map_err(|e| {
        Diagnostic::new(
            E_CMP_001,
            format!("{shown} does not parse as a component: {e}"),
        )
        .in_file(path)
    })?;
    if !exports.iter().any(|e| e == world.export()) {
        let found = if exports.is_empty() {
            "nothing".to_string()
        } else {
            exports.join(", ")
        };
        return Err(Diagnostic::new(
            E_CMP_002,
            format!(
                "{shown} is not a {} (world `{}` of wit/capsule.wit): it exports {found}, not {}",
                world.kind(),
                world.name(),
                world.export()
            ),
        )
        .in_file(path));
    }
    Ok(())
}

/// The names the outermost component exports (nested modules and components skipped).
fn top_level_exports(bytes: &[u8]) -> Result<Vec<String>, wasmparser::BinaryReaderError> {
    use wasmparser::Payload;
    let mut depth = 0usize;
    let mut names = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    names.push(export?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_module_and_other_bytes_are_refused_naming_the_file() {
        let core = b"\0asm\x01\0\0\0";
        let e = check(core, Path::new("tools/x.wasm"), World::Tool).unwrap_err();
        assert_eq!(e.code, E_CMP_001);
        assert!(e.message.contains("tools/x.wasm") && e.message.contains("core"));
        let e = check(b"#!/bin/sh\n", Path::new("t.wasm"), World::Hook).unwrap_err();
        assert_eq!(e.code, E_CMP_001);
    }

    #[test]
    fn an_empty_component_exports_nothing_and_is_another_world() {
        let empty = b"\0asm\x0d\0\x01\0";
        let e = check(empty, Path::new("hooks/h.wasm"), World::Hook).unwrap_err();
        assert_eq!(e.code, E_CMP_002);
        assert!(e.message.contains("exports nothing"), "{}", e.message);
    }
}
