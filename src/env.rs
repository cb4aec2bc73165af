//! Every environment variable mur reads or sets, one const each (as uv's
//! `uv-static` `EnvVars`). Code names a variable only through these consts;
//! docs/environment.md is generated from [`ALL`] (`env::markdown`), and
//! tests/it/env_docs.rs keeps it, and the tables in docs/testing.md, docs/formation.md and
//! docs/agent.md, equal to this list.
//!
//! Not here: the names a capsule lists in `capabilities.env.allow` (its own, passed
//! through as they are) and variables of other programs (`CARGO_*` in the build).

/// Who reads or sets a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// mur reads it from its own environment.
    Reads,
    /// The launcher sets it for each member it starts.
    Member,
    /// A session sets it for its harness (`grant::env`, docs/grants.md).
    Harness,
    /// A test setting (docs/testing.md): off unless set.
    Test,
    /// Read only by mur's own test suite, never by the binary.
    Suite,
}

impl Use {
    fn title(self) -> &'static str {
        match self {
            Use::Reads => "Read by mur",
            Use::Member => "Set by the launcher for each member",
            Use::Harness => "Set by a session for its harness",
            Use::Test => "Test settings",
            Use::Suite => "Read by mur's test suite",
        }
    }
}

/// One variable: its name, who uses it, what it means.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub used: Use,
    pub doc: &'static str,
}

macro_rules! vars {
    ($( #[doc = $doc:literal] $name:ident: $used:ident; )*) => {
        $( #[doc = $doc] pub const $name: &str = stringify!($name); )*
        /// Every variable, in the order docs/environment.md lists them.
        pub const ALL: &[Var] = &[ $( Var { name: stringify!($name), used: Use::$used, doc: $doc.trim_ascii() } ),* ];
    };
}

vars! {
    /// The user's home: `~/.murmur/` (stores, records, running sessions, formations) is under it. A session sets it for its harness to the records' `home/`.
    HOME: Reads;
    /// The harness's program search path, passed on as it is (`/usr/local/bin:/usr/bin:/bin` when unset).
    PATH: Reads;
    /// The formation id of a member. Set in `mur run`'s own environment, `mur run --roster` refuses (E-RUN-046); without a lifeline, W-RUN-007.
    MURMUR_FORMATION_ID: Member;
    /// The descriptor of the member's formation channel (`4`): its credentials, work folder and callees' door URLs.
    MURMUR_FORMATION_CHANNEL: Member;
    /// The descriptor of the read end of the member's lifeline (`3`): its close ends the member.
    MURMUR_FORMATION_LIFELINE: Member;
    /// `1`: the launcher printed the host warnings (W-SEC-013) for the whole formation, so the member does not.
    MURMUR_HOST_WARNINGS_REPORTED: Member;
    /// Runtime-owned: the components' list of callees at their virtual addresses. The launcher removes it from a member's environment; set in `mur run`'s own, it is refused.
    MURMUR_FORMATION_PEERS: Member;
    /// What mur logs, as tracing's EnvFilter reads it (`RUST_LOG=mur=debug`, `RUST_LOG=debug`); set, it replaces `-v`'s levels and may name other crates. Members inherit it.
    RUST_LOG: Reads;
    /// `1`: do not print the host warning that mur runs as root (W-SEC-013), for CI containers that run as root on purpose. Members inherit it.
    MURMUR_ALLOW_ROOT: Reads;
    /// `1`: run the capsule's native processes unconfined, as `mur run --unconfined` does (W-RUN-011, docs/confinement.md). Members inherit it.
    MURMUR_UNCONFINED: Reads;
    /// The OpenTelemetry collector's base URL (`http://localhost:4318`): each session sends its spans to it, `v1/traces` added to the path, over OTLP/HTTP JSON (docs/trace.md, Live export). `--otlp-endpoint` wins; the launcher passes its value to members on their channel.
    OTEL_EXPORTER_OTLP_ENDPOINT: Reads;
    /// The traces URL itself, used as it is; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`, not over `--otlp-endpoint`.
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Reads;
    /// Headers of every export request, `key=value,key=value`, values percent-encoded (an API key: `x-honeycomb-team=...`). Never written to a trace or a log.
    OTEL_EXPORTER_OTLP_HEADERS: Reads;
    /// The traces' own headers; set, they replace `OTEL_EXPORTER_OTLP_HEADERS`.
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: Reads;
    /// The descriptor of a delegated child's spawner lifeline. A child carries its parent's formation id and no formation lifeline, and prints no W-RUN-007.
    MURMUR_SPAWNER_LIFELINE: Reads;
    /// The harness's `TMPDIR`: the records' `tmp/`.
    TMPDIR: Harness;
    /// The session id.
    MURMUR_SESSION_ID: Harness;
    /// The work folder, where the agent works.
    MURMUR_WORKDIR: Harness;
    /// The records' `out/`.
    MURMUR_OUT: Harness;
    /// Multiplies every time limit mur keeps (`src/timing.rs`). Values outside (0, 1] are ignored.
    MUR_TEST_TIME_SCALE: Test;
    /// Seconds after the entry member started at which the launcher allocates memory until the OOM killer ends it.
    MUR_TEST_LAUNCHER_BALLOON: Test;
    /// `<member>:<seconds>`: seconds after that formation member became ready at which it allocates memory until the OOM killer ends it.
    MUR_TEST_MEMBER_BALLOON: Test;
    /// A whole number: the Landlock ABI mur takes the kernel to have (`0`: none), so a test reaches E-RUN-054 on a kernel that has Landlock.
    MUR_TEST_LANDLOCK_ABI: Test;
    /// `landlock`: the confinement takes network tier `landlock` even where tier `netns` works, so both tiers are tested on one machine.
    MUR_TEST_CONFINE_TIER: Test;
    /// The program the launcher starts for every member instead of `mur` itself.
    MUR_TEST_MEMBER_PROGRAM: Test;
    /// How every child is cloned: `fork-clone3` (the path aarch64 takes) or `clone` (where `clone3` is refused) instead of this machine's own.
    MUR_TEST_SPAWN_VIA: Test;
    /// A session's write quota for its WASM components, in bytes, in place of 1 GiB.
    MUR_TEST_WRITE_QUOTA: Test;
    /// The file the launcher writes its termination message to instead of `/dev/termination-log`.
    MUR_TEST_TERMINATION_LOG: Test;
    /// Set, the docs tests rewrite the generated docs (docs/errors.md, docs/environment.md) instead of comparing.
    MUR_UPDATE_DOCS: Suite;
}

/// The prefix of the names mur owns: a capsule's `capabilities.env.allow` never passes
/// one on.
pub const RESERVED_PREFIX: &str = "MURMUR_";

/// The names of the variables of one use, in [`ALL`]'s order.
pub fn names(used: Use) -> Vec<&'static str> {
    ALL.iter()
        .filter(|v| v.used == used)
        .map(|v| v.name)
        .collect()
}

/// The text of docs/environment.md.
pub fn markdown() -> String {
    let mut s = String::from(
        "# Environment variables\n\n\
         Every variable mur reads or sets. Generated from `src/env.rs`; \
         `MUR_UPDATE_DOCS=1 cargo test --test it env_docs` rewrites this file.\n",
    );
    for used in [Use::Reads, Use::Member, Use::Harness, Use::Test, Use::Suite] {
        s.push_str(&format!(
            "\n## {}\n\n| Variable | Meaning |\n| --- | --- |\n",
            used.title()
        ));
        for v in ALL.iter().filter(|v| v.used == used) {
            s.push_str(&format!("| `{}` | {} |\n", v.name, v.doc));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_const_is_its_name_and_listed_once() {
        assert_eq!(MURMUR_FORMATION_ID, "MURMUR_FORMATION_ID");
        let mut names: Vec<_> = ALL.iter().map(|v| v.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(
            ALL.iter()
                .all(|v| !v.doc.is_empty() && !v.doc.contains('\n'))
        );
    }
}
