//! From the YAML tree to a checked `Manifest`, one section at a time. Each fault
//! names the key path (`lifecycle.queue_depth`) and sits at the node at fault.

use std::collections::HashMap;

use super::rules;
use super::*;
use crate::catalogue::{
    Code, E_MAN_003, E_MAN_004, E_MAN_005, E_MAN_006, E_MAN_007, E_MAN_008, E_MAN_009, E_MAN_010,
    E_MAN_011,
};
use crate::yaml::{Map, Node, Reader, Value};

mod skills;

const TOP: &[&str] = &[
    "name",
    "version",
    "description",
    "instructions",
    "agent",
    "inference",
    "lifecycle",
    "exports",
    "network",
    "capabilities",
    "tools",
    "hooks",
    "trace",
    "artifacts",
    "skills",
];
const HTTP: &[&str] = &[
    "transport",
    "base_url",
    "model",
    "api_key_env",
    "driver",
    "ca_file",
    "timeout",
    "max_retries",
    "stream",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "stop",
];
const PROCESS: &[&str] = &["transport", "command"];

/// Caps that catch a typo (an extra zero) rather than limit real use.
const MAX_TURNS: u32 = 10_000;
/// `inference.parallel_tools`' ceiling: 32 instances of 64 MiB is 2 GiB.
const MAX_PARALLEL_TOOLS: u32 = 32;
const MAX_QUEUE_DEPTH: u32 = 1_024;
const MAX_RETRIES: u32 = 20;
const MAX_TOKENS: u32 = 10_000_000;
const MAX_STOPS: usize = 4;

type Rule = fn(&str) -> std::result::Result<(), String>;

pub(super) fn manifest(r: &Reader, root: &Node) -> Result<Manifest> {
    if root.is_null() {
        return Err(r
            .fault(root, "the manifest is empty")
            .hint("Start from `mur new <NAME>`, or see docs/manifest.md."));
    }
    let m = r.map(root, "", TOP)?;
    let name = checked(
        r,
        r.required(&m, "name", "name")?,
        "name",
        E_MAN_004,
        rules::capsule_name,
    )?;
    let version = checked(
        r,
        r.required(&m, "version", "version")?,
        "version",
        E_MAN_005,
        rules::version,
    )?;
    let description = non_blank(
        r,
        r.required(&m, "description", "description")?,
        "description",
    )?;
    let instructions = m
        .get("instructions")
        .map(|n| checked(r, n, "instructions", E_MAN_007, rules::capsule_path))
        .transpose()?;
    let agent = agent(r, r.required(&m, "agent", "agent")?)?;
    let inference = inference(r, &m)?;
    let lifecycle = lifecycle(r, &m)?;
    let exports = exports(r, &m)?;
    let (network, auth_node) = network(r, &m)?;
    let (capabilities, spawn_node) = capabilities(r, &m)?;
    let tools = tools(r, &m)?;
    let hooks = hooks(r, &m)?;
    let trace = trace(r, &m)?;
    let artifacts = artifacts(r, &m)?;
    let skills = skills::skills(r, &m)?;

    if let (Some(auth), Some(spawn)) = (auth_node, spawn_node)
        && !capabilities.spawn.allow.is_empty()
    {
        return Err(r
            .fault_with(
                E_MAN_003,
                auth,
                format!(
                    "`network.authentication` is declared beside a non-empty `capabilities.spawn.allow` (line {})",
                    spawn.line
                ),
            )
            .hint("A capsule that authenticates its callers cannot also delegate to child capsules: remove capabilities.spawn.allow, or remove network.authentication."));
    }

    Ok(Manifest {
        name,
        version,
        description,
        instructions,
        agent,
        inference,
        lifecycle,
        exports,
        network,
        capabilities,
        tools,
        hooks,
        trace,
        artifacts,
        skills,
    })
}

/// A scalar that `rule` accepts; a refusal is `code` at the node.
fn checked(r: &Reader, node: &Node, field: &str, code: Code, rule: Rule) -> Result<String> {
    let text = r.string(node, field)?;
    rule(text).map_err(|why| {
        r.fault_with(code, node, format!("`{field}` {why}"))
            .hint(hint_for(code, field))
    })?;
    Ok(text.to_string())
}

fn hint_for(code: Code, field: &str) -> String {
    match code {
        E_MAN_004 if field == "skills[].id" => {
            "Write skill ids like `review-code`: lowercase letters, digits, `-` and `_`.".into()
        }
        E_MAN_004 if field.ends_with("tools[].name") => {
            "Name tools like `read_file`: lowercase letters, digits, `-` and `_`.".into()
        }
        E_MAN_004 if field == "name" => {
            "Name the capsule like `coder` or `code-review`: a lowercase letter, then lowercase letters, digits or `-`.".into()
        }
        E_MAN_004 if field.starts_with("capabilities.spawn") => {
            "Write `<scope>/<name>`, such as `local/coder`, or `<scope>/*` for every capsule of a scope.".into()
        }
        E_MAN_004 => "Write the full artifact name, `<scope>/<name>`, such as `local/coder`.".into(),
        E_MAN_005 => "Write an exact version such as `0.1.0` (quote it if you like).".into(),
        E_MAN_006 => "Write a whole number and one unit: `45s`, `90m`, `12h` or `30d`.".into(),
        E_MAN_007 => format!("Write `{field}` as a path relative to the capsule's folder, such as `tools/search.wasm`."),
        E_MAN_008 => "Write a bare host such as `localhost` or `api.example.com:443`; a URL as `http://host:port/path`.".into(),
        E_MAN_009 => "Environment variable names use letters, digits and `_`, such as `OPENAI_API_KEY`.".into(),
        _ => "See docs/manifest.md.".into(),
    }
}

fn non_blank(r: &Reader, node: &Node, field: &str) -> Result<String> {
    let text = r.string(node, field)?;
    if text.trim().is_empty() {
        return Err(r.fault(node, format!("`{field}` is blank")).hint(format!(
            "Write a value for `{field}`, or leave the key out if it is optional."
        )));
    }
    Ok(text.to_string())
}

/// One of `choices`, as written.
fn choice<'a>(r: &Reader, node: &'a Node, field: &str, choices: &[&str]) -> Result<&'a str> {
    let text = r.string(node, field)?;
    if choices.contains(&text) {
        return Ok(text);
    }
    Err(r
        .fault(
            node,
            format!(
                "`{field}` is `{text}`, which is not one of: {}",
                choices.join(", ")
            ),
        )
        .hint(format!("Write one of: {}.", choices.join(", "))))
}

/// The scalar's text when it is not one `expected` takes, for a message that says
/// what was written rather than only its kind.
fn misread(r: &Reader, node: &Node, field: &str, expected: &str) -> Option<Diagnostic> {
    match &node.value {
        Value::Scalar { plain: false, .. } => Some(
            r.fault(
                node,
                format!("`{field}` must be {expected}, not quoted text"),
            )
            .hint(format!("Write `{field}` without quotes, as {expected}.")),
        ),
        Value::Scalar { text, plain: true } => Some(
            r.fault(node, format!("`{field}` must be {expected}, not `{text}`"))
                .hint(format!("Write `{field}` as {expected}.")),
        ),
        _ => None,
    }
}

/// A plain `true` or `false`.
fn boolean(r: &Reader, node: &Node, field: &str) -> Result<bool> {
    r.bool(node, field)
        .map_err(|e| misread(r, node, field, "true or false").unwrap_or(e))
}

/// An integer in `min..=max`.
fn bounded(r: &Reader, node: &Node, field: &str, min: u32, max: u32) -> Result<u32> {
    let n = r
        .integer(node, field)
        .map_err(|e| misread(r, node, field, "a whole number").unwrap_or(e))?;
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(r
            .fault(node, format!("`{field}` is {n}, outside {min}..={max}"))
            .hint(format!("Write a whole number from {min} to {max}."))),
    }
}

fn duration(r: &Reader, node: &Node, field: &str) -> Result<Duration> {
    let text = r.string(node, field)?;
    rules::duration(text).map_err(|why| {
        r.fault_with(E_MAN_006, node, format!("`{field}`: {why}"))
            .hint(hint_for(E_MAN_006, field))
    })
}

/// An optional mapping section whose keys are in `allowed`.
fn section<'a>(
    r: &Reader,
    m: &Map<'a>,
    key: &str,
    field: &str,
    allowed: &[&str],
) -> Result<Option<Map<'a>>> {
    m.get(key).map(|n| r.map(n, field, allowed)).transpose()
}

/// An optional list of scalars under `key`, each accepted by `rule`.
fn list(
    r: &Reader,
    m: &Map<'_>,
    key: &str,
    field: &str,
    code: Code,
    rule: Rule,
) -> Result<Vec<String>> {
    let Some(node) = m.get(key) else {
        return Ok(Vec::new());
    };
    let item_field = format!("{field}[]");
    r.seq(node, field)?
        .iter()
        .map(|item| checked(r, item, &item_field, code, rule))
        .collect()
}

fn agent(r: &Reader, node: &Node) -> Result<Agent> {
    let every: Vec<&str> = HTTP.iter().chain(&PROCESS[1..]).copied().collect();
    let m = r.map(node, "agent", &every)?;
    let t_node = r.required(&m, "transport", "agent.transport")?;
    let kind = choice(
        r,
        t_node,
        "agent.transport",
        &["builtin", "http", "process"],
    )?;
    let allowed: &[&str] = match kind {
        "http" => HTTP,
        "process" => PROCESS,
        _ => &["transport"],
    };
    for (key, _) in m.entries {
        let name = key.text().unwrap_or("");
        if !allowed.contains(&name) {
            return Err(r
                .fault(
                    key,
                    format!("`agent.{name}` is not a setting of `transport: {kind}`"),
                )
                .hint(format!(
                    "With `transport: {kind}`, `agent` takes: {}.",
                    allowed.join(", ")
                )));
        }
    }
    let transport = match kind {
        "http" => {
            let url_node = r.required(&m, "base_url", "agent.base_url")?;
            let base_url = r.string(url_node, "agent.base_url")?;
            check_url(base_url).map_err(|why| {
                r.fault_with(E_MAN_008, url_node, format!("`agent.base_url` {why}"))
                    .hint("Write the endpoint's base URL, such as `http://127.0.0.1:11434/v1`.")
            })?;
            Transport::Http(HttpTransport {
                base_url: base_url.to_string(),
                model: non_blank(r, r.required(&m, "model", "agent.model")?, "agent.model")?,
                api_key_env: m
                    .get("api_key_env")
                    .map(|n| checked(r, n, "agent.api_key_env", E_MAN_009, rules::env_name))
                    .transpose()?,
                driver: m
                    .get("driver")
                    .map(|n| checked(r, n, "agent.driver", E_MAN_007, rules::component_path))
                    .transpose()?,
                ca_file: m
                    .get("ca_file")
                    .map(|n| checked(r, n, "agent.ca_file", E_MAN_007, rules::capsule_path))
                    .transpose()?,
                timeout: m
                    .get("timeout")
                    .map(|n| duration(r, n, "agent.timeout"))
                    .transpose()?
                    .unwrap_or(DEFAULT_TIMEOUT),
                max_retries: m
                    .get("max_retries")
                    .map(|n| bounded(r, n, "agent.max_retries", 0, MAX_RETRIES))
                    .transpose()?
                    .unwrap_or(DEFAULT_MAX_RETRIES),
                stream: m
                    .get("stream")
                    .map(|n| boolean(r, n, "agent.stream"))
                    .transpose()?
                    .unwrap_or(false),
                sampling: sampling(r, &m)?,
            })
        }
        "process" => {
            let c_node = r.required(&m, "command", "agent.command")?;
            let command = r.strings(c_node, "agent.command")?;
            if command.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(r.fault(c_node, "`agent.command` names no program").hint(
                    "Write the program and its arguments, such as `[\"sh\", \"harness.sh\"]`.",
                ));
            }
            Transport::Process(ProcessTransport {
                command: command.into_iter().map(str::to_string).collect(),
            })
        }
        _ => Transport::Builtin,
    };
    Ok(Agent { transport })
}

/// `agent.temperature`, `top_p`, `max_tokens`, `seed` and `stop`.
fn sampling(r: &Reader, m: &Map<'_>) -> Result<Sampling> {
    let number = |key: &str, max: f64| -> Result<Option<serde_json::Number>> {
        let Some(node) = m.get(key) else {
            return Ok(None);
        };
        let field = format!("agent.{key}");
        let parsed = match &node.value {
            Value::Scalar { text, plain: true } => {
                serde_json::from_str::<serde_json::Number>(text).ok()
            }
            _ => None,
        };
        let Some(n) = parsed else {
            return Err(misread(r, node, &field, "a number")
                .unwrap_or_else(|| {
                    r.fault(
                        node,
                        format!("`{field}` must be a number, not {}", node.kind()),
                    )
                })
                .hint(format!(
                    "Write `{field}` as a number from 0 to {max}, such as `0.2`."
                )));
        };
        match n.as_f64() {
            Some(x) if (0.0..=max).contains(&x) => Ok(Some(n)),
            _ => Err(r
                .fault(node, format!("`{field}` is {n}, outside 0..={max}"))
                .hint(format!("Write a number from 0 to {max}."))),
        }
    };
    let mut out = Sampling {
        temperature: number("temperature", 2.0)?,
        top_p: number("top_p", 1.0)?,
        ..Sampling::default()
    };
    if let Some(n) = m.get("max_tokens") {
        out.max_tokens = Some(bounded(r, n, "agent.max_tokens", 1, MAX_TOKENS)?);
    }
    if let Some(n) = m.get("seed") {
        out.seed = Some(
            r.integer(n, "agent.seed")
                .map_err(|e| misread(r, n, "agent.seed", "a whole number").unwrap_or(e))?,
        );
    }
    if let Some(n) = m.get("stop") {
        let stops = match &n.value {
            Value::Seq(_) => r.strings(n, "agent.stop")?,
            _ => vec![r.string(n, "agent.stop")?],
        };
        if stops.len() > MAX_STOPS || stops.iter().any(|s| s.is_empty()) {
            return Err(r
                .fault(
                    n,
                    format!("`agent.stop` must be 1 to {MAX_STOPS} strings, none empty"),
                )
                .hint("Write a string, or a list of up to 4 strings."));
        }
        out.stop = stops.into_iter().map(str::to_string).collect();
    }
    Ok(out)
}

fn check_url(text: &str) -> std::result::Result<(), String> {
    let url = reqwest::Url::parse(text).map_err(|e| format!("`{text}` is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{text}` is not an http or https URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{text}` names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{text}` holds a credential; name its variable in `agent.api_key_env` instead"
        ));
    }
    Ok(())
}

fn inference(r: &Reader, m: &Map<'_>) -> Result<Inference> {
    let mut out = Inference::default();
    let Some(s) = section(
        r,
        m,
        "inference",
        "inference",
        &["max_turns", "parallel_tools"],
    )?
    else {
        return Ok(out);
    };
    if let Some(n) = s.get("max_turns") {
        out.max_turns = bounded(r, n, "inference.max_turns", 1, MAX_TURNS)?;
    }
    if let Some(n) = s.get("parallel_tools") {
        out.parallel_tools = bounded(r, n, "inference.parallel_tools", 1, MAX_PARALLEL_TOOLS)?;
    }
    Ok(out)
}

fn lifecycle(r: &Reader, m: &Map<'_>) -> Result<Lifecycle> {
    let mut out = Lifecycle::default();
    let Some(s) = section(
        r,
        m,
        "lifecycle",
        "lifecycle",
        &[
            "task_acceptance",
            "after_task",
            "queue_depth",
            "idle_timeout",
        ],
    )?
    else {
        return Ok(out);
    };
    if let Some(n) = s.get("task_acceptance") {
        out.task_acceptance = match choice(r, n, "lifecycle.task_acceptance", &["single", "queue"])?
        {
            "queue" => TaskAcceptance::Queue,
            _ => TaskAcceptance::Single,
        };
    }
    if let Some(n) = s.get("after_task") {
        out.after_task = match choice(r, n, "lifecycle.after_task", &["exit", "sleep"])? {
            "exit" => AfterTask::Exit,
            _ => AfterTask::Sleep,
        };
    }
    if let Some(n) = s.get("queue_depth") {
        out.queue_depth = bounded(r, n, "lifecycle.queue_depth", 0, MAX_QUEUE_DEPTH)?;
        if out.queue_depth > 0 && out.task_acceptance == TaskAcceptance::Single {
            return Err(r
                .fault(
                    n,
                    "`lifecycle.queue_depth` holds tasks only with `task_acceptance: queue`",
                )
                .hint("Set lifecycle.task_acceptance: queue, or remove lifecycle.queue_depth."));
        }
    }
    if let Some(n) = s.get("idle_timeout") {
        out.idle_timeout = Some(duration(r, n, "lifecycle.idle_timeout")?.as_secs());
    }
    Ok(out)
}

fn exports(r: &Reader, m: &Map<'_>) -> Result<Exports> {
    let mut out = Exports::default();
    if let Some(s) = section(r, m, "exports", "exports", &["peer_tasks"])?
        && let Some(p) = section(r, &s, "peer_tasks", "exports.peer_tasks", &["accept"])?
        && let Some(n) = p.get("accept")
    {
        out.peer_tasks.accept = boolean(r, n, "exports.peer_tasks.accept")?;
    }
    Ok(out)
}

/// The network section, and the `authentication` key's node (for E-MAN-003).
fn network<'a>(r: &Reader, m: &Map<'a>) -> Result<(Network, Option<&'a Node>)> {
    let Some(s) = section(r, m, "network", "network", &["authentication"])? else {
        return Ok((Network::default(), None));
    };
    let Some(a) = section(
        r,
        &s,
        "authentication",
        "network.authentication",
        &["bearer_env"],
    )?
    else {
        return Ok((Network::default(), None));
    };
    let bearer_env = list(
        r,
        &a,
        "bearer_env",
        "network.authentication.bearer_env",
        E_MAN_009,
        rules::env_name,
    )?;
    let network = Network {
        authentication: Some(Authentication { bearer_env }),
    };
    Ok((network, s.key("authentication")))
}

/// The capabilities section, and the `spawn.allow` value's node (for E-MAN-003).
fn capabilities<'a>(r: &Reader, m: &Map<'a>) -> Result<(Capabilities, Option<&'a Node>)> {
    let mut out = Capabilities::default();
    let Some(s) = section(
        r,
        m,
        "capabilities",
        "capabilities",
        &["network", "env", "shell", "spawn", "files"],
    )?
    else {
        return Ok((out, None));
    };
    if let Some(n) = section(r, &s, "network", "capabilities.network", &["allow"])? {
        out.network.allow = list(
            r,
            &n,
            "allow",
            "capabilities.network.allow",
            E_MAN_008,
            rules::host,
        )?;
    }
    if let Some(e) = section(r, &s, "env", "capabilities.env", &["allow"])? {
        out.env.allow = list(
            r,
            &e,
            "allow",
            "capabilities.env.allow",
            E_MAN_009,
            rules::env_name,
        )?;
    }
    if let Some(sh) = section(r, &s, "shell", "capabilities.shell", &["baseline_env"])? {
        let baseline_env = list(
            r,
            &sh,
            "baseline_env",
            "capabilities.shell.baseline_env",
            E_MAN_009,
            rules::env_name,
        )?;
        out.shell = Some(Shell { baseline_env });
    }
    let mut spawn_node = None;
    if let Some(sp) = section(
        r,
        &s,
        "spawn",
        "capabilities.spawn",
        &["allow", "max_depth", "max_live"],
    )? {
        out.spawn.allow = list(
            r,
            &sp,
            "allow",
            "capabilities.spawn.allow",
            E_MAN_004,
            rules::spawn_pattern,
        )?;
        spawn_node = sp.get("allow");
        let limit = |key: &str| {
            sp.get(key)
                .map(|n| {
                    let field = format!("capabilities.spawn.{key}");
                    bounded(r, n, &field, 1, super::SPAWN_LIMIT_MAX)
                })
                .transpose()
        };
        out.spawn.max_depth = limit("max_depth")?;
        out.spawn.max_live = limit("max_live")?;
    }
    if let Some(f) = section(r, &s, "files", "capabilities.files", &["read", "write"])? {
        for (key, into) in [
            ("read", &mut out.files.read),
            ("write", &mut out.files.write),
        ] {
            *into = list(
                r,
                &f,
                key,
                &format!("capabilities.files.{key}"),
                E_MAN_011,
                rules::file_grant,
            )?;
        }
    }
    Ok((out, spawn_node))
}

/// The mappings of an optional list of mappings, each with keys in `allowed`.
fn entries<'a>(r: &Reader, m: &Map<'a>, key: &str, allowed: &[&str]) -> Result<Vec<Map<'a>>> {
    let Some(node) = m.get(key) else {
        return Ok(Vec::new());
    };
    r.seq(node, key)?
        .iter()
        .map(|item| r.map(item, &format!("{key}[]"), allowed))
        .collect()
}

/// Refuses a second entry with the same `name` (E-MAN-010), at the second one.
fn unique(
    r: &Reader,
    seen: &mut HashMap<String, usize>,
    name: &str,
    node: &Node,
    field: &str,
) -> Result<()> {
    if let Some(line) = seen.insert(name.to_string(), node.line) {
        return Err(r
            .fault_with(
                E_MAN_010,
                node,
                format!("`{field}` `{name}` is listed twice (first at line {line})"),
            )
            .hint("Give each entry its own name, or remove the repeat."));
    }
    Ok(())
}

fn tools(r: &Reader, m: &Map<'_>) -> Result<Vec<Tool>> {
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for t in entries(r, m, "tools", &["name", "path", "description"])? {
        let name_node = r.required(&t, "name", "tools[].name")?;
        let name = checked(r, name_node, "tools[].name", E_MAN_004, rules::tool_name)?;
        unique(r, &mut seen, &name, name_node, "tools[].name")?;
        let path = checked(
            r,
            r.required(&t, "path", "tools[].path")?,
            "tools[].path",
            E_MAN_007,
            rules::component_path,
        )?;
        let description = non_blank(
            r,
            r.required(&t, "description", "tools[].description")?,
            "tools[].description",
        )?;
        out.push(Tool {
            name,
            path,
            description,
        });
    }
    Ok(out)
}

fn hooks(r: &Reader, m: &Map<'_>) -> Result<Vec<Hook>> {
    let names: Vec<&str> = HookEvent::ALL.iter().map(HookEvent::as_str).collect();
    let mut out = Vec::new();
    for h in entries(r, m, "hooks", &["event", "path", "async"])? {
        let event = choice(
            r,
            r.required(&h, "event", "hooks[].event")?,
            "hooks[].event",
            &names,
        )?;
        let path = checked(
            r,
            r.required(&h, "path", "hooks[].path")?,
            "hooks[].path",
            E_MAN_007,
            rules::component_path,
        )?;
        let is_async = h
            .get("async")
            .map(|n| boolean(r, n, "hooks[].async"))
            .transpose()?
            .unwrap_or(false);
        out.push(Hook {
            event: HookEvent::from_name(event).unwrap_or(HookEvent::SessionStart),
            path,
            is_async,
        });
    }
    Ok(out)
}

fn trace(r: &Reader, m: &Map<'_>) -> Result<Trace> {
    let mut out = Trace::default();
    if let Some(t) = section(r, m, "trace", "trace", &["retain"])?
        && let Some(k) = section(
            r,
            &t,
            "retain",
            "trace.retain",
            &["max_sessions", "max_age"],
        )?
    {
        if let Some(n) = k.get("max_sessions") {
            out.retain.max_sessions =
                Some(bounded(r, n, "trace.retain.max_sessions", 1, u32::MAX)?);
        }
        if let Some(n) = k.get("max_age") {
            out.retain.max_age = Some(duration(r, n, "trace.retain.max_age")?);
        }
    }
    Ok(out)
}

fn artifacts(r: &Reader, m: &Map<'_>) -> Result<Vec<ArtifactRef>> {
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for a in entries(r, m, "artifacts", &["name", "version"])? {
        let name_node = r.required(&a, "name", "artifacts[].name")?;
        let name = checked(
            r,
            name_node,
            "artifacts[].name",
            E_MAN_004,
            rules::artifact_name,
        )?;
        unique(r, &mut seen, &name, name_node, "artifacts[].name")?;
        let version = checked(
            r,
            r.required(&a, "version", "artifacts[].version")?,
            "artifacts[].version",
            E_MAN_005,
            rules::version,
        )?;
        out.push(ArtifactRef { name, version });
    }
    Ok(out)
}
