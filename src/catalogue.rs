//! The one catalogue of every `E-` and `W-` code mur prints. `docs/errors.md` is
//! generated from it (`mur explain --markdown`) and a test keeps the two equal.
//!
//! Each family has its own section; keep codes sorted within it.

use std::fmt;

/// A catalogue code such as `E-ROS-001`. Only the constants below exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code(&'static str);

impl Code {
    pub const fn as_str(&self) -> &'static str {
        self.0
    }
    pub fn is_warning(&self) -> bool {
        self.0.starts_with("W-")
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// One catalogue entry: what the code means and what to do about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub code: Code,
    pub title: &'static str,
    pub meaning: &'static str,
    pub hint: &'static str,
}

macro_rules! catalogue {
    ($( $name:ident = $code:literal, $title:literal, $meaning:literal, $hint:literal; )*) => {
        $( pub(crate) const $name: Code = Code($code); )*
        /// Every entry, in catalogue order.
        pub(crate) const ENTRIES: &[Entry] = &[
            $( Entry { code: $name, title: $title, meaning: $meaning, hint: $hint }, )*
        ];
    };
}

catalogue! {
    // ---- E-AGT: the agent's model (transport: http), checked at session start --
    E_AGT_001 = "E-AGT-001", "API key variable not set",
        "`agent.api_key_env` names an environment variable that is not set, or is empty, in mur's environment. The session refuses to start rather than fail every task.",
        "Export the variable before `mur run` (`export OPENAI_API_KEY=...`), or remove `agent.api_key_env` for a server that needs no key.";
    E_AGT_003 = "E-AGT-003", "CA certificates unusable",
        "`agent.ca_file`, or the file `SSL_CERT_FILE` names, cannot be read or holds no PEM certificate.",
        "Name a PEM file of CA certificates (`-----BEGIN CERTIFICATE-----`); a relative `agent.ca_file` is read from the capsule's folder.";

    // ---- E-APR: approvals, what a later launch may run (docs/approval.md) -------
    E_APR_001 = "E-APR-001", "Changed since approved",
        "A file that decides what a launch runs or may do (the project's roster.yaml or murmur.lock, an artifact of the project store, a capsule folder's murmur.yaml or a file it declares) differs from what mur last recorded under ~/.murmur/approvals/. A session working in the project can write those files, so the launch starts nothing until you approve the change.",
        "If you made the change, run `mur approve` in the project (or the capsule folder); it shows each change and records it. If you did not, find what wrote it.";
    E_APR_002 = "E-APR-002", "Project folder holds ~/.murmur",
        "The project folder is your home folder or above it: every session working there could write ~/.murmur, mur's approvals, global store and records.",
        "Run mur in a project folder below your home folder (`mur new <NAME>` makes one).";
    E_APR_003 = "E-APR-003", "Approval cannot be checked",
        "The approval record under ~/.murmur/approvals/ cannot be read, parsed or written, or a protected file of the project cannot be read to compare it.",
        "Check that ~/.murmur/approvals/ is a folder you own and the file named is readable; deleting a broken record makes the next launch trust and record the project again.";

    // ---- E-CLI: command line -------------------------------------------------
    E_CLI_001 = "E-CLI-001", "Unknown code",
        "`mur explain` was given a code that is not in the catalogue.",
        "Run `mur explain --list` to see every code.";
    E_CLI_002 = "E-CLI-002", "Man pages cannot be written",
        "`mur man --dir` could not make the folder or write a page into it; the message names the path.",
        "Check that the folder is yours and writable, or print the top page with `mur man`.";

    // ---- E-CMP / W-CMP: the capsule's WASM components (tools, hooks, driver) ----
    E_CMP_001 = "E-CMP-001", "Not a WASM component",
        "A `tools[].path`, `hooks[].path` or `agent.driver` file is not a WebAssembly component: a core module, another file, or one that does not parse. mur runs WASI 0.2 components.",
        "Build it for the wasm32-wasip2 target (`cargo build --target wasm32-wasip2`), which makes a component; docs/components.md shows a tool.";
    E_CMP_002 = "E-CMP-002", "Component for another world",
        "The component does not export what its place in murmur.yaml needs: a tool exports `murmur:capsule/tool@0.1.0`, a hook `murmur:capsule/hook@0.1.0`, a model driver `murmur:capsule/driver@0.1.0` (wit/capsule.wit).",
        "Generate the bindings from wit/capsule.wit with world `tool-component` for a tool, `hook-component` for a hook or `driver-component` for a driver.";
    E_CMP_003 = "E-CMP-003", "Component cannot be loaded",
        "The component could not be compiled, linked or started: it imports an interface mur does not provide, or its file changed or vanished.",
        "Import only WASI 0.2 (wasi:cli, wasi:filesystem, wasi:clocks, wasi:random, wasi:io, wasi:http); the message names the import.";
    W_CMP_001 = "W-CMP-001", "Hook failed",
        "A hook trapped, ran out of time or memory, or returned an error for an event whose hooks cannot refuse; the session goes on.",
        "Read the message for the hook's file and what went wrong; a before_tool hook's error refuses the call instead.";
    W_CMP_002 = "W-CMP-002", "Tool schema unusable",
        "A tool's `schema()` trapped, ran out of time, or returned no JSON object; the tool is offered to the model with an open object schema, and its calls still run.",
        "Return a JSON Schema object from `schema()`, such as {\"type\":\"object\",\"properties\":{...}}.";

    // ---- E-KUB: `mur kube job`, the Kubernetes Job for a project (docs/kubernetes.md) --
    E_KUB_001 = "E-KUB-001", "Grace shorter than the wind-down",
        "`mur kube job --grace` is below the formation's wind-down: members are killed 25 s after their lifelines close, and the launcher needs 10 s more to reap and write its records; the kubelet's SIGKILL would cut them.",
        "Leave --grace out (35 s), or give a larger one.";
    E_KUB_002 = "E-KUB-002", "Task list unusable",
        "`mur kube job --tasks FILE` could not read FILE, a task file a line of it names (relative to FILE's folder), found a task file empty, or found no task, more than 10000, or more than a ConfigMap holds (about 1 MB).",
        "List one task file per line; blank lines and lines starting with `#` are skipped.";
    E_KUB_003 = "E-KUB-003", "Not a Kubernetes name",
        "The Job's name (`--name`, or the project folder's name by default) or `--records-claim` is not a lowercase RFC 1123 label: letters, digits and `-`, starting and ending with a letter or digit, at most 52 characters for a Job.",
        "Give --name with such a name, such as `team-run`.";
    E_KUB_004 = "E-KUB-004", "Bad image or quantity",
        "`--image` is not an image reference, or `--cpu`/`--memory` is not a Kubernetes quantity.",
        "Name the image as `docker push` did (registry/name:tag); write quantities as 500m, 2, 512Mi, 1Gi.";

    // ---- E-MAN / W-MAN: murmur.yaml, the capsule manifest ---------------------
    E_MAN_001 = "E-MAN-001", "Manifest does not read",
        "murmur.yaml is missing, is not YAML, has a key that is not in the schema, a value of the wrong type, a value outside its choices or range, or lacks a required field.",
        "Compare the file with docs/manifest.md; the message names the key at fault.";
    E_MAN_003 = "E-MAN-003", "Authentication beside spawn",
        "network.authentication is declared beside a non-empty capabilities.spawn.allow: a member that authenticates its callers cannot also delegate to child capsules.",
        "Remove capabilities.spawn.allow, or remove network.authentication.";
    E_MAN_004 = "E-MAN-004", "Bad name",
        "A name in murmur.yaml does not have its form: the capsule `name` (`^[a-z][a-z0-9-]{0,63}$`), a `tools[].name` or `skills[].id`, an `artifacts[].name` (`<scope>/<name>`) or a `capabilities.spawn.allow` entry (`<scope>/<name>` or `<scope>/*`).",
        "Use lowercase letters, digits and `-`, starting with a letter; write artifact names with their scope, such as `local/coder`.";
    E_MAN_005 = "E-MAN-005", "Bad version",
        "A `version` or `artifacts[].version` is blank, names a moving target (`latest`, `stable`, `edge`), or holds characters a version may not.",
        "Write an exact version such as `0.1.0`: letters, digits, `.`, `-`, `+` and `_`.";
    E_MAN_006 = "E-MAN-006", "Bad duration",
        "`lifecycle.idle_timeout`, `trace.retain.max_age` or `agent.timeout` is not a whole number with one unit, or is zero.",
        "Write a duration such as `45s`, `90m`, `12h` or `30d`; leave the key out for no limit.";
    E_MAN_007 = "E-MAN-007", "Path outside the capsule",
        "`instructions`, a `tools[].path`, a `hooks[].path` or `agent.driver` is absolute, leaves the capsule through `..`, or (for a component) is not a `.wasm` file; or (`mur pack`, `mur install`, `mur run`) a `tools[].path`, `hooks[].path` or `agent.driver` names a file the capsule does not hold.",
        "Write a path relative to the capsule's folder, such as `tools/search.wasm`, of a file that is there (build components before packing).";
    E_MAN_008 = "E-MAN-008", "Bad network address",
        "A `capabilities.network.allow` entry is not a bare host (optionally with `:port`), or `agent.base_url` is not an http(s) URL with a host.",
        "Write hosts such as `localhost` or `api.example.com:443`, and base URLs such as `http://127.0.0.1:11434/v1`.";
    E_MAN_009 = "E-MAN-009", "Bad environment variable name",
        "A name in `capabilities.env.allow`, `capabilities.shell.baseline_env`, `network.authentication.bearer_env` or `agent.api_key_env` is not an environment variable name.",
        "Use letters, digits and `_`, not starting with a digit, such as `OPENAI_API_KEY`.";
    E_MAN_010 = "E-MAN-010", "Listed twice",
        "Two `tools` share a name, two `skills` an id, or two `artifacts` name the same artifact.",
        "Give each tool its own name and each skill its own id; list each artifact once.";
    E_MAN_011 = "E-MAN-011", "Bad file grant",
        "A `capabilities.files.read` or `capabilities.files.write` entry is empty, holds `..`, or names another user's home (`~name`).",
        "Write an absolute path (`/srv/data`), one under your home (`~/datasets`) or one relative to the work folder (`data`).";
    W_MAN_001 = "W-MAN-001", "Credential listed as passed",
        "`capabilities.env.allow` or `capabilities.shell.baseline_env` names a variable that `agent.api_key_env` or `network.authentication.bearer_env` also names. A credential reaches no component, harness or shell command (and the door's no delegated child either), whatever those lists say, so the name is not passed (docs/grants.md).",
        "Remove the name from `capabilities.env.allow` and `capabilities.shell.baseline_env`; give the executor a credential of its own under another name if it needs one.";
    W_MAN_002 = "W-MAN-002", "Instructions file missing",
        "`instructions:` names a file the capsule does not hold (a misspelled path, or a file left out), or one that is not UTF-8 text. The session starts, and the model runs without that system prompt. Said at every session start and by `mur doctor`.",
        "Correct the path in murmur.yaml (relative to the capsule's folder, written with `/`) or add the file, then `mur sync` for an installed member.";

    // ---- E-NEW: mur new, scaffolding -----------------------------------------
    E_NEW_001 = "E-NEW-001", "Bad name for mur new",
        "The name given to `mur new` does not match ^[a-z][a-z0-9-]{0,31}$.",
        "Start with a lowercase letter, then use up to 31 lowercase letters, digits or `-`, such as `my-agent`.";
    E_NEW_002 = "E-NEW-002", "Target folder exists",
        "`mur new <NAME>` writes the folder <NAME>/, and something already exists at that path. Nothing was written.",
        "Choose another name, or move the existing folder away first.";
    E_NEW_003 = "E-NEW-003", "Scaffold could not be written",
        "`mur new` could not write its folder (permissions, disk full). It wrote into a temporary folder beside the target, which was removed: nothing was left behind.",
        "Check that the current folder is writable and the disk has room, then run it again.";

    // ---- E-PAK / E-STO / E-REG: packing, stores, lock ------------------------
    E_PAK_001 = "E-PAK-001", "Nothing to pack or install",
        "The path given to `mur pack` or `mur install` does not exist, or is a folder without murmur.yaml at its root.",
        "Name a capsule source folder (murmur.yaml at its root) or a .mur.zip file.";
    E_PAK_002 = "E-PAK-002", "Symlink leaves the capsule",
        "A symlink in the capsule source points outside the source folder, points nowhere, or makes a loop; an artifact holds only what is inside the folder.",
        "Copy the file into the capsule folder instead of linking to it, or remove the link.";
    E_PAK_003 = "E-PAK-003", "Cannot pack or unpack a file",
        "A file of the capsule could not be read or written: it is unreadable, is not a regular file or folder (a socket, a fifo, a device), or has a name an artifact cannot hold (not UTF-8, a backslash).",
        "Rename or remove the file the message names, or fix its permissions.";
    E_PAK_004 = "E-PAK-004", "Not a valid artifact",
        "The .mur.zip does not read as a zip archive: it is truncated or corrupt, a checksum fails, it is encrypted, uses a compression other than deflate, holds the same name twice, or a name that is both a file and a folder.",
        "Pack the capsule again with `mur pack` and install the new file.";
    E_PAK_005 = "E-PAK-005", "Path escapes the archive",
        "An entry of the archive has an absolute path, a `..` component, a backslash or a drive letter, or is a symlink: unpacked, it could write outside its folder (zip-slip).",
        "Do not install this file; pack the capsule with `mur pack`, which never writes such entries.";
    E_PAK_006 = "E-PAK-006", "Archive too large",
        "Unpacked, the archive would exceed a cap: 256 MiB in all, 10000 entries, or an entry over 1 MiB that expands more than 200 times its packed size (a zip bomb).",
        "Keep large data out of the capsule; fetch it at run time instead.";
    E_PAK_007 = "E-PAK-007", "No murmur.yaml in the archive",
        "The archive has no murmur.yaml at its root, so it is not a capsule.",
        "Pack the capsule folder (murmur.yaml at its root) with `mur pack`.";
    E_PAK_008 = "E-PAK-008", "Packed murmur.yaml does not parse",
        "The murmur.yaml inside the archive is refused by the manifest rules; the message gives the manifest code, line and column inside `<archive>!murmur.yaml`.",
        "Fix murmur.yaml in the capsule source, check it with `mur pack`, and install the new file.";
    E_REG_001 = "E-REG-001", "Lock does not read",
        "murmur.lock is not YAML, has a key that is not in the lock format, a value of the wrong type, lacks a required field, or has a lock_version other than 1.",
        "Run `mur lock` to write it again; never edit murmur.lock by hand.";
    E_REG_002 = "E-REG-002", "Nothing installed to pin",
        "`mur lock` was asked to pin an artifact (a roster member or a murmur.yaml artifact) that is installed at that version in neither the project store nor the global store.",
        "Install it with `mur install`, then run `mur lock` again.";
    E_REG_003 = "E-REG-003", "Artifact pinned twice",
        "murmur.lock pins the same artifact name twice; a lock pins each name once.",
        "Run `mur lock` to write it again.";
    E_REG_004 = "E-REG-004", "Bad pin",
        "A pin of murmur.lock has a name that is not `<scope>/<name>`, a version that cannot be stored, or a sha256 that is not 64 lowercase hex digits.",
        "Run `mur lock` to write it again.";
    E_REG_005 = "E-REG-005", "Lock disagrees",
        "murmur.lock pins this artifact at another version or sha256 than the one found in the stores.",
        "Install the pinned version, or run `mur lock` to pin what is installed now.";
    E_REG_006 = "E-REG-006", "Two versions to pin",
        "`mur lock` found the same artifact asked for at two versions (by roster.yaml and murmur.yaml, or by two roster members); a lock pins one version of each name.",
        "Make roster.yaml and murmur.yaml ask for the same version.";
    E_REG_007 = "E-REG-007", "Lock cannot be written",
        "`mur lock` could not write murmur.lock in the project folder (read-only, no permission, a full disk); the old murmur.lock, if any, is as it was.",
        "Make the project folder writable, then run `mur lock` again.";
    E_REG_008 = "E-REG-008", "Not a project to lock",
        "`mur lock` ran in a folder with no murmur.yaml, no roster.yaml and nothing in the project store, so there is nothing to pin; no murmur.lock was written.",
        "Run `mur lock` in the project folder (the one holding roster.yaml or murmur.yaml).";
    E_STO_001 = "E-STO-001", "Store cannot be used",
        "The store folder (.murmur/artifacts/ or ~/.murmur/artifacts/) is missing and cannot be made, cannot be read, or a path in it is not a folder.",
        "Check that the project folder or $HOME exists and that .murmur is a folder you own.";
    E_STO_002 = "E-STO-002", "Store is not writable",
        "Writing the artifact into the store failed (a read-only folder, no permission, a full disk); nothing was installed and the store is as it was.",
        "Make the store writable (or free space), then install again.";
    E_STO_003 = "E-STO-003", "Other bytes already installed",
        "An artifact of the same name and version is already installed in this store with another sha256.",
        "Give the capsule a new version, or replace the installed one with `mur install --force`; in a roster project, `mur sync` reinstalls every member from its folder.";
    E_STO_004 = "E-STO-004", "Name or version cannot be stored",
        "An artifact name is not `<scope>/<name>` (lowercase letters, digits and `-`, starting with a letter), or its version is blank, longer than 64 characters, or holds a character other than letters, digits and `.+_-`.",
        "Give the capsule a plain name and a version such as 1.2.0.";
    W_STO_001 = "W-STO-001", "Source differs from installed",
        "A roster member's source folder beside the roster packs other bytes than the artifact admission bound it to, or no longer packs: the formation runs the installed bytes, not the edit.",
        "Run `mur sync` in the roster's folder to install the folder's bytes (or fix the murmur.yaml it names first).";
    W_REG_001 = "W-REG-001", "Several versions installed",
        "The project store holds several versions of an artifact nothing asks for by version; `mur lock` pinned the highest.",
        "Name the version you want in roster.yaml or murmur.yaml, then run `mur lock` again.";

    // ---- E-ROS / W-ROS: roster.yaml and its admission -------------------------
    E_ROS_001 = "E-ROS-001", "Roster does not read",
        "roster.yaml is missing, is not YAML, or does not have the shape the roster schema gives: an unknown key, a wrong type, a missing field, or a value its rule refuses.",
        "Compare the file with docs/roster.md; the message names the key at fault.";
    E_ROS_002 = "E-ROS-002", "Not exactly one entry member",
        "No member, or more than one member, has `entry: true`.",
        "Mark exactly one member `entry: true`.";
    E_ROS_003 = "E-ROS-003", "Duplicate member name",
        "Two members of the roster share a name.",
        "Give each member its own name.";
    E_ROS_004 = "E-ROS-004", "Rule names no member",
        "A reachability rule's `from` or `to` names no member of the roster.",
        "Name members by their roster `name`, not by capsule.";
    E_ROS_005 = "E-ROS-005", "Callee does not serve peers",
        "A member that a rule lets others call does not declare exports.peer_tasks.accept: true.",
        "Declare exports.peer_tasks.accept: true in that member's murmur.yaml, or drop it from the rule.";
    E_ROS_006 = "E-ROS-006", "Door without authentication",
        "The roster has at least one edge, and a member does not declare network.authentication.",
        "Declare network.authentication in every member's murmur.yaml.";
    E_ROS_007 = "E-ROS-007", "Member not installed",
        "A member's capsule is not installed at its version in the project store or the global store, or its packed murmur.yaml does not parse.",
        "Install it with `mur install` in the roster's folder (or `mur install --global`), then run `mur doctor` again.";
    E_ROS_008 = "E-ROS-008", "Rule calls the entry member",
        "A reachability rule lists the entry member in `to`; the entry member is never called by a peer.",
        "To have a member report to the entry member, let the entry member call it.";
    W_ROS_001 = "W-ROS-001", "More callers than a member holds",
        "More members may call this member than its lifecycle holds tasks at once; calls may wait for it.",
        "Set lifecycle.task_acceptance: queue and lifecycle.queue_depth to the number the warning names, in that member's murmur.yaml, then `mur sync`; on a wait cycle (W-ROS-002), break the cycle instead.";
    W_ROS_002 = "W-ROS-002", "Wait cycle",
        "Reachability has a cycle whose members all wait for their calls' answers: a call round it reaches a member busy with the task that waits on it. At run time such a call fails at once, naming the chain.",
        "Drop one edge of the cycle from reachability, or set inference.max_turns: 2 on one of its members; no task_acceptance or queue_depth breaks a cycle.";

    // ---- E-REC: a session's records, trace and running record ---------------
    E_REC_001 = "E-REC-001", "Records cannot be written",
        "mur could not create or write a session's records directory under ~/.murmur/records/ (trace.jsonl, out/result.txt, MURMUR.md, home/, tmp/, logs/).",
        "Check that ~/.murmur/records/ is yours, writable and not full; the message names the path.";
    E_REC_002 = "E-REC-002", "Secret kept out of the trace",
        "A trace record carried a formation token (`mft1.…`) or another secret the session holds; the writer refused the record instead of writing it.",
        "This is a bug in mur or in a tool that echoed a credential: report it with the record type the message names.";
    E_REC_003 = "E-REC-003", "Trace does not read",
        "A line of trace.jsonl before its last is not a trace record.",
        "The file was edited or two writers shared it; the message names the line. The records before it are intact.";
    E_REC_004 = "E-REC-004", "Running record cannot be written",
        "mur could not create, write or remove a session's record under ~/.murmur/running/.",
        "Check that ~/.murmur/running/ is yours and writable; the message names the path.";

    // ---- E-TRC / W-TRC: live trace export to an OpenTelemetry collector -------
    E_TRC_001 = "E-TRC-001", "Live export setting unusable",
        "`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_HEADERS` (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`) is set to something mur cannot send spans with: not an http:// or https:// URL with a host, or headers that are not `key=value,...` with percent-encoded values. The session (or formation) does not start rather than run without the export asked for.",
        "Give a base URL such as `http://localhost:4318` (mur adds `/v1/traces`), or unset the variable; docs/trace.md, Live export.";
    W_TRC_001 = "W-TRC-001", "Collector not taking spans",
        "Live export could not deliver spans: the collector refused the connection, did not answer within 5 s, answered with an error, or the queue of 2048 spans was full. Printed once (in a formation, once for all its members); the tasks go on, and `session_end` counts what was dropped (`otlp_dropped_spans`). `mur trace export` still writes every span from the trace.",
        "Start the collector (OTLP/HTTP, usually port 4318), check the URL, or export afterwards with `mur trace export`.";

    // ---- E-RUN / W-RUN / W-SEC: sessions and formations -----------------------
    E_RUN_001 = "E-RUN-001", "Capsule not installed",
        "`mur run --capsule <NAME> --capsule-version <V>` found that capsule at that version in neither the project store (.murmur/artifacts/) nor the global store (~/.murmur/artifacts/).",
        "Install it with `mur install`, or check the name (`<scope>/<name>`) and version with `mur ls`.";
    E_RUN_002 = "E-RUN-002", "Session could not start",
        "The session could not stage itself: its capsule could not be unpacked, its door could not be bound, or its records could not be made.",
        "Read the message for the part that failed; check the permissions of ~/.murmur/.";
    E_RUN_003 = "E-RUN-003", "No such session",
        "`mur stop`, `mur trace show` or `mur run --resume` was given an id that names no session (or no formation) mur knows of.",
        "List live sessions with `mur ps`; ids are `ses_…` or `frm_…`.";
    E_RUN_004 = "E-RUN-004", "Cannot stop the session",
        "`mur stop` could not signal a process of the session or formation.",
        "Check that the process still runs and belongs to you.";
    E_RUN_005 = "E-RUN-005", "Task cannot be read",
        "--task names a file that exists but cannot be read.",
        "Check the file's permissions, or pass the task's text itself.";
    E_RUN_006 = "E-RUN-006", "Flag not honoured here",
        "A flag was given that this command cannot honour as it was asked (a --lifecycle-* flag or --capsule with --roster, whose launch sets each member's capsule and the entry member's lifecycle); mur refuses it rather than ignore it.",
        "Drop the flag; `mur run --help` says which flags go with --roster.";
    E_RUN_007 = "E-RUN-007", "Task not taken",
        "`mur send` could not give the session its task: the door did not answer, refused the call (busy, ending, not authorized), or ended its stream before the task ended.",
        "Read the quoted answer; check the session with `mur ps` and its trace with `mur trace show`.";
    E_RUN_008 = "E-RUN-008", "Not a formation cgroup",
        "`mur formation-watch`, which only the launcher starts (docs/design/descendants.md), was given a directory that is no formation cgroup (a cgroup v2 named `murmur-frm_…` with `cgroup.kill`), or a launcher that is not `<pid>:<start time>`. It refuses rather than kill what such a cgroup holds.",
        "Do not run it by hand: `mur run --roster` starts it with the formation's own cgroup.";
    E_RUN_009 = "E-RUN-009", "Ambiguous id",
        "The id given to `mur stop`, `mur send` or `mur trace show` is a prefix of more than one session or formation id; the message lists them.",
        "Type more of the id, or paste one the message lists; `mur ps -a` shows every session and formation.";
    E_RUN_010 = "E-RUN-010", "Task did not complete",
        "The task `mur run --task` ran, or `mur send` gave, ended failed, canceled or rejected; the message is its reason. stdout carries answers only, so nothing was printed there.",
        "`mur trace show <ses_id>` shows what the task did: the model's requests, the tool calls and their errors.";
    E_RUN_040 = "E-RUN-040", "Canceled by SIGTERM or SIGINT",
        "The session received SIGTERM (`mur stop`, murmur.StopSession) or SIGINT (Ctrl-C) while a task ran; the task was canceled, and its `canceled:` line names the signal.",
        "Let the task finish, or send a second SIGTERM (or press Ctrl-C again) to exit at once.";
    E_RUN_045 = "E-RUN-045", "A peer did not come up",
        "A formation peer did not become ready, or its directory already existed; the whole launch was refused and every member already started was stopped.",
        "Read the peer's lines above, run the capsule alone with `mur run --capsule`, and check ~/.murmur/formations/.";
    E_RUN_046 = "E-RUN-046", "Bad formation environment",
        "The formation channel or environment is not what the launcher sets up, or `mur run --roster` was started inside a formation.",
        "Launch formations with `mur run --roster` from outside any formation; never set MURMUR_FORMATION_* by hand.";
    E_RUN_047 = "E-RUN-047", "Artifact changed since admission",
        "The installed artifact's bytes are not the ones admission bound the member to.",
        "Do not reinstall capsules while a formation launches; launch it again.";
    E_RUN_053 = "E-RUN-053", "Deadline reached",
        "The session or formation reached its --deadline.",
        "Give a later --deadline, or a smaller task.";
    E_RUN_054 = "E-RUN-054", "Kernel cannot confine native processes",
        "The capsule starts native processes (a `transport: process` harness or the `shell` tool), and the kernel lacks what their confinement needs: Landlock ABI 6 or later (Linux 6.12+, `landlock` in the boot's `lsm=` list). mur refuses to run them with the user's whole access instead (docs/confinement.md).",
        "Run on a kernel with Landlock enabled, or opt out knowingly for this run: `mur run --unconfined`, or `MURMUR_UNCONFINED=1` (members of a roster inherit it).";
    E_RUN_055 = "E-RUN-055", "Confinement cannot be planned",
        "A grant of the capsule's native confinement cannot be made: a `capabilities.files` path does not exist, or a grant (the work folder included) holds or lies in mur's own folder `~/.murmur`, whose running records and tokens no capsule may read. Landlock grants whole trees; it cannot leave a hole in one.",
        "Grant a narrower path, create the missing one, or run the session from a project folder rather than from your home.";
    W_RUN_007 = "W-RUN-007", "Formation member started by hand",
        "This mur run carries MURMUR_FORMATION_ID but no lifeline: nothing winds it down when its formation ends.",
        "End it with `mur stop`; launch formations with `mur run --roster`.";
    W_RUN_008 = "W-RUN-008", "Callees out of network reach",
        "The roster lets this member call others, but its capabilities.network.allow reaches no door on localhost, so every call it makes fails.",
        "Add `localhost` to capabilities.network.allow.";
    W_RUN_020 = "W-RUN-020", "Formation already live here",
        "`mur run --roster` found a formation of the same roster (launched from the same folder) still live; the new launch runs beside it, and both entry members work in the project folder.",
        "Give the live formation the task with `mur send <frm_id>`, or stop it first with `mur stop <frm_id>`.";
    W_RUN_010 = "W-RUN-010", "Native processes confined: the tier",
        "The capsule starts native processes (a `transport: process` harness or the `shell` tool); they and all they start run confined: Landlock files deny by default (reads included), no direct network connection (only mur's egress proxy), seccomp refuses UDP, raw and packet sockets, no signals or ptrace outside their tree. The line names the network tier: `netns` (a network namespace with only loopback) or `landlock` (Landlock matches ports, not addresses: a direct connection to any address on the proxy's port is not stopped), and what it cannot stop. Printed once at start.",
        "docs/confinement.md says what is and is not confined; run capsules you do not trust with tier landlock's gap inside a container or a VM.";
    W_RUN_011 = "W-RUN-011", "Confinement opted out",
        "`--unconfined` or `MURMUR_UNCONFINED=1` is in force: the capsule's native processes run with the user's whole access to files, network and processes. Printed once at start and recorded in the trace's `session_start` (`unconfined`).",
        "Drop the opt-out to confine them (docs/confinement.md).";
    W_SEC_013 = "W-SEC-013", "Host warning",
        "The host lacks a protection mur relies on; printed once by the launcher for every member. Running as root is one such: Landlock and seccomp confine a root harness and shell command too, but they keep root's kernel privileges that no Landlock rule removes (loading kernel modules, changing system settings). `MURMUR_ALLOW_ROOT=1` silences it where root is meant (a CI container).",
        "Read the warning's text for the protection that is missing.";
}

/// The entry for `code`, if the catalogue has it (case-insensitive).
pub(crate) fn lookup(code: &str) -> Option<&'static Entry> {
    ENTRIES
        .iter()
        .find(|e| e.code.as_str().eq_ignore_ascii_case(code))
}

/// The catalogue as Markdown: the text of docs/errors.md.
pub(crate) fn markdown() -> String {
    let mut out = String::from(
        "# Error and warning codes\n\n\
         Generated from `src/catalogue.rs` by `mur explain --markdown`; a test keeps them equal.\n\
         `mur explain <CODE>` prints one entry.\n",
    );
    for e in ENTRIES {
        out.push_str(&format!(
            "\n## {} — {}\n\n{}\n\n**Hint:** {}\n",
            e.code, e.title, e.meaning, e.hint
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for e in ENTRIES {
            let c = e.code.as_str();
            assert!(seen.insert(c), "duplicate {c}");
            let parts: Vec<_> = c.split('-').collect();
            assert_eq!(parts.len(), 3, "{c}");
            assert!(parts[0] == "E" || parts[0] == "W", "{c}");
            assert!(
                parts[1].len() == 3 && parts[1].chars().all(|ch| ch.is_ascii_uppercase()),
                "{c}"
            );
            assert!(
                parts[2].len() == 3 && parts[2].chars().all(|ch| ch.is_ascii_digit()),
                "{c}"
            );
            assert!(!e.meaning.is_empty() && !e.hint.is_empty(), "{c}");
        }
    }

    #[test]
    fn lookup_ignores_case() {
        assert_eq!(lookup("e-ros-001").unwrap().code, E_ROS_001);
        assert!(lookup("E-NO-999").is_none());
    }
}
