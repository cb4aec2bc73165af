//! Admission of a 64-member roster with `reachability: all` (3969 edges), every member
//! installed with the real `mur install` in a temporary project store. Prints the
//! median of repeated admissions. Goal: under 20 ms. Run with `just bench`.

// A bench is a program that prints its figures; it uses some of the dev-dependencies.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]
// It points HOME at a temporary folder with `set_var` before any thread starts.
#![allow(unsafe_code, reason = "std::env::set_var is unsafe in edition 2024")]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use mur_test::clean;

use mur_test::measure;

/// Admissions per measurement (one in a smoke run).
fn runs() -> usize {
    measure::sized(40, 1)
}

const MEMBERS: usize = 64;

fn main() {
    let home = tempfile::tempdir().expect("temp HOME");
    let project = tempfile::tempdir().expect("temp project");
    // SAFETY: single-threaded here, before anything reads the environment.
    unsafe { std::env::set_var("HOME", home.path()) };

    let mut folders = Vec::with_capacity(MEMBERS);
    let mut roster = String::from("roster_version: 1\nmembers:\n");
    for i in 0..MEMBERS {
        let name = format!("member-{i:02}");
        let folder = home.path().join("src").join(&name);
        std::fs::create_dir_all(&folder).expect("capsule folder");
        std::fs::write(
            folder.join("murmur.yaml"),
            format!(
                "name: {name}\nversion: 1.0.0\ndescription: Bench member {i}.\nagent:\n  transport: builtin\n\
                 exports:\n  peer_tasks:\n    accept: true\nnetwork:\n  authentication: {{}}\n"
            ),
        )
        .expect("murmur.yaml");
        folders.push(folder);
        roster.push_str(&format!(
            "  - name: {name}\n    capsule: local/{name}\n    version: 1.0.0\n{}",
            if i == 0 { "    entry: true\n" } else { "" }
        ));
    }
    roster.push_str("reachability: all\n");
    let status = clean::clean_mur()
        .arg("install")
        .args(&folders)
        .current_dir(project.path())
        .env("HOME", home.path())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("mur install");
    assert!(status.success(), "mur install failed");
    let file = project.path().join("roster.yaml");
    std::fs::write(&file, roster).expect("roster.yaml");

    let admit = |file: &Path| mur::admission::admit(file).unwrap_or_else(|d| panic!("{d}"));
    let first = admit(&file);
    assert_eq!(first.members.len(), MEMBERS);
    assert_eq!(first.edges.len(), (MEMBERS - 1) * (MEMBERS - 1));

    let median = |f: &dyn Fn()| {
        let mut times: Vec<Duration> = (0..runs())
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect();
        times.sort();
        times
    };
    let times = median(&|| {
        black_box(admit(black_box(&file)));
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Where the time goes: the roster alone (checks 1-5), and the store look-ups with
    // their packed manifests (check 6).
    let shape = median(&|| {
        black_box(mur::roster::load(black_box(&file)).expect("roster"));
    });
    let stores = median(&|| {
        for m in &first.members {
            let found = mur::store::find(project.path(), &m.installed.name, &m.installed.version)
                .expect("find")
                .expect("installed");
            black_box(mur::pack::read_manifest(&found.path).expect("manifest"));
        }
    });
    measure::record_ms(
        "admission",
        "admission",
        serde_json::json!({"members": MEMBERS}),
        &times,
    );
    println!(
        "admission of {MEMBERS} members, reachability: all ({} edges, {} warnings): \
         median {:.2} ms (min {:.2}, max {:.2}, {} runs; goal < 20 ms)",
        first.edges.len(),
        first.warnings.len(),
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len(),
    );
    println!(
        "  of which: roster.yaml and checks 1-5 median {:.2} ms; store look-ups and packed manifests median {:.2} ms",
        ms(shape[shape.len() / 2]),
        ms(stores[stores.len() / 2]),
    );
}
