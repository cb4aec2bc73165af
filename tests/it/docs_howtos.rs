//! Every fenced block of every how-to (docs/howto-*.md) is run by a test, as printed,
//! taken from the page: [`HOWTO_BLOCKS`] says which test runs each, and a block no
//! entry names (a new one, or one moved) fails `every_how_to_block_is_run_by_a_test`.
//! The WASM tool's crate is built from the page's own blocks; the door's single-session
//! `mur run` serves a `mur send`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::docs_pages::{blocks, name_of, page, run_sh, words};
use crate::support::{World, stderr, stdout};

/// Every fenced block of every how-to, in page order: the page, the block's language,
/// and the tests that run it (`fn` names in tests/it/), or `not run: <why>`.
const HOWTO_BLOCKS: &[(&str, &str, &str)] = &[
    (
        "howto-door.md",
        "sh",
        "the_door_how_to_s_single_session_serves_mur_send the_door_how_to_s_commands_reach_a_live_formation",
    ),
    (
        "howto-door.md",
        "sh",
        "the_door_how_to_s_single_session_serves_mur_send the_door_how_to_s_commands_reach_a_live_formation",
    ),
    (
        "howto-door.md",
        "sh",
        "the_door_how_to_s_commands_reach_a_live_formation",
    ),
    (
        "howto-local-model.md",
        "sh",
        "not run: ollama's own commands, and no ollama server or model is on the test machine",
    ),
    (
        "howto-local-model.md",
        "yaml",
        "the_local_model_how_to_s_capsules_answer_on_a_local_server",
    ),
    (
        "howto-local-model.md",
        "sh",
        "not run: llama-server's own command, and no llama.cpp or model file is on the test machine",
    ),
    (
        "howto-local-model.md",
        "yaml",
        "the_local_model_how_to_s_capsules_answer_on_a_local_server",
    ),
    (
        "howto-local-model.md",
        "sh",
        "the_local_model_how_to_s_capsules_answer_on_a_local_server",
    ),
    (
        "howto-process-harness.md",
        "yaml",
        "the_process_harness_how_to_runs_as_written",
    ),
    (
        "howto-process-harness.md",
        "python",
        "the_process_harness_how_to_runs_as_written",
    ),
    (
        "howto-process-harness.md",
        "sh",
        "the_process_harness_how_to_runs_as_written",
    ),
    (
        "howto-process-harness.md",
        "sh",
        "the_process_harness_how_to_s_call_tools_run_in_a_formation",
    ),
    (
        "howto-process-harness.md",
        "yaml",
        "the_process_harness_how_to_s_call_tools_run_in_a_formation",
    ),
    (
        "howto-process-harness.md",
        "python",
        "the_process_harness_how_to_s_call_tools_run_in_a_formation",
    ),
    (
        "howto-process-harness.md",
        "sh",
        "the_process_harness_how_to_s_call_tools_run_in_a_formation",
    ),
    (
        "howto-wasm-tool.md",
        "toml",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
    (
        "howto-wasm-tool.md",
        "rust",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
    (
        "howto-wasm-tool.md",
        "sh",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
    (
        "howto-wasm-tool.md",
        "yaml",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
    (
        "howto-wasm-tool.md",
        "sh",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
    (
        "howto-wasm-tool.md",
        "text",
        "the_wasm_tool_how_to_builds_its_crate_and_runs_it",
    ),
];

/// Every fenced block of `text`, in order: its language (the word after the opening
/// fence, empty when none) and its lines.
fn fenced(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_string(), String::new())),
            (Some(_), Some(rest)) if rest.trim().is_empty() => out.extend(open.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fence is left open");
    out
}

#[test]
fn every_how_to_block_is_run_by_a_test() {
    assert_eq!(
        fenced("a\n```sh\nx\n```\n```\ny\n```\n"),
        [("sh".into(), "x\n".into()), (String::new(), "y\n".into())]
    );
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut pages: Vec<String> = std::fs::read_dir(&docs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("howto-") && n.ends_with(".md"))
        .collect();
    pages.sort();
    assert!(pages.len() >= 4, "{pages:?}");
    let found: Vec<(String, String)> = pages
        .iter()
        .flat_map(|name| {
            fenced(&page(name))
                .into_iter()
                .map(|(lang, _)| (name.clone(), lang))
        })
        .collect();
    let listed: Vec<(String, String)> = HOWTO_BLOCKS
        .iter()
        .map(|(p, l, _)| (p.to_string(), l.to_string()))
        .collect();
    assert_eq!(
        found, listed,
        "every block of a how-to is in HOWTO_BLOCKS, in page order, with the test that runs it"
    );
    // The tests named exist.
    let sources = [
        include_str!("docs_howtos.rs"),
        include_str!("docs_pages.rs"),
    ]
    .concat();
    for (page, lang, runner) in HOWTO_BLOCKS {
        if let Some(why) = runner.strip_prefix("not run: ") {
            assert!(why.len() > 20, "{page} {lang}: say why no test runs it");
            continue;
        }
        for test in runner.split_whitespace() {
            assert!(
                sources.contains(&format!("fn {test}(")),
                "{page} {lang}: no test `{test}`"
            );
        }
    }
}

/// The crate `shout/` from the page's `Cargo.toml` and `lib.rs` blocks and mur's `wit/`,
/// built by the page's `cargo build` block; the capsule `shouter/` from its
/// `murmur.yaml` with that `shout.wasm`; the page's `mur run` block, printing the
/// page's `text` block. The crate's folder outlives the test (under the system's
/// temporary folder, one per checkout), so that its dependencies build once.
#[test]
fn the_wasm_tool_how_to_builds_its_crate_and_runs_it() {
    let text = page("howto-wasm-tool.md");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let checkout = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        root.hash(&mut h);
        h.finish()
    };
    let build = std::env::temp_dir().join(format!("mur-howto-wasm-tool-{checkout:016x}"));
    let shout = build.join("shout");
    let _ = std::fs::remove_dir_all(shout.join("src"));
    let _ = std::fs::remove_dir_all(shout.join("wit"));
    std::fs::create_dir_all(shout.join("src")).unwrap();
    let toml = &blocks(&text, "toml")[0];
    assert!(toml.contains("name = \"shout\""), "{toml}");
    std::fs::write(shout.join("Cargo.toml"), toml).unwrap();
    std::fs::write(shout.join("src/lib.rs"), &blocks(&text, "rust")[0]).unwrap();
    // "Copy mur's `wit/` folder to `shout/wit/`"
    assert!(text.contains("Copy mur's `wit/` folder to `shout/wit/`"));
    let out = std::process::Command::new("cp")
        .arg("-r")
        .arg(root.join("wit"))
        .arg(shout.join("wit"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let sh = blocks(&text, "sh");
    assert_eq!(sh.len(), 2, "the build, the run");
    assert!(sh[0].contains("cargo build"), "{}", sh[0]);
    let built = run_sh(&World::new(), &sh[0], build.clone());
    assert!(built.status.success(), "{}", stderr(&built));
    let wasm = shout.join("target/wasm32-wasip2/release/shout.wasm");
    assert!(
        text.contains("writes `target/wasm32-wasip2/release/shout.wasm` (about 100 KiB)"),
        "the page names what the build writes"
    );
    let size = std::fs::metadata(&wasm).unwrap().len();
    assert!((50_000..200_000).contains(&size), "about 100 KiB: {size}");

    let w = World::new();
    let manifest = &blocks(&text, "yaml")[0];
    let dir = w.proj.join(name_of(manifest));
    assert_eq!(dir.file_name().unwrap(), "shouter");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("murmur.yaml"), manifest).unwrap();
    std::fs::copy(&wasm, dir.join("tools/shout.wasm")).unwrap();
    let out = run_sh(&w, &sh[1], w.proj.clone());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), blocks(&text, "text")[0]);
}

/// The door how-to's single-session `mur run` line, as printed, in a capsule's folder:
/// it says on stderr which session serves where, and the page's `mur send ses_…` line,
/// the example id replaced by the live one, gets the answer on stdout.
#[test]
fn the_door_how_to_s_single_session_serves_mur_send() {
    let text = page("howto-door.md");
    let sh = blocks(&text, "sh");
    let run = words(sh[0].lines().next().unwrap());
    assert_eq!(run, ["mur", "run"]);
    assert!(
        sh[0]
            .lines()
            .next()
            .unwrap()
            .contains("one capsule, from its folder")
    );
    let w = World::new();
    crate::support::ok(w.mur().args(["new", "picnic"]));
    let capsule = w.proj.join("picnic");
    let child = w
        .mur_in(&capsule)
        .args(&run[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut session = crate::support::KillOnDrop::pid(child);
    let (tx, rx) = std::sync::mpsc::channel();
    let err = session.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut said = String::new();
    let ses = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no `serving at` line within 30 s: {said}"));
        said.push_str(&line);
        said.push('\n');
        if let Some(at) = line.find("session ses_")
            && line.contains(" serving at http://127.0.0.1:")
        {
            break line[at + "session ".len()..]
                .split(' ')
                .next()
                .unwrap()
                .to_string();
        }
    };
    let example = "ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081";
    let send = sh[1].lines().find(|l| l.contains(example)).unwrap();
    assert!(send.contains("# one session"), "{send}");
    let send = words(&send.replace(example, &ses));
    let out = w.mur().args(&send[1..]).output().unwrap();
    assert!(out.status.success(), "{send:?}: {}", stderr(&out));
    assert!(stderr(&out).contains(": completed"), "{}", stderr(&out));
    assert!(!stdout(&out).trim().is_empty(), "the answer on stdout");
    crate::support::ok(w.mur().args(["stop", &ses]));
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = session.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the session outlived `mur stop`");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{said}");
}
