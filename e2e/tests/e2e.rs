//! `cargo test -p mur-e2e --test e2e [-- NAME...]`: every scenario (or those whose
//! name contains one of the NAMEs), all at once, each in a container of its own; then
//! the table. Needs the image `just e2e-image` builds; `just e2e` does both.

use std::time::Instant;

use futures_util::FutureExt;

use mur_e2e::container;
use mur_e2e::report::{self, Row};
use mur_e2e::scenarios;

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let failed = runtime.block_on(async move {
        match container::remove_stale().await {
            Ok(0) => {}
            Ok(n) => eprintln!("removed {n} stale e2e container(s)"),
            Err(e) => {
                eprintln!("e2e: {e:#}");
                return true;
            }
        }
        if let Err(e) = container::check_image().await {
            eprintln!("e2e: {e:#}");
            return true;
        }
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        let mut order = Vec::new();
        for s in scenarios::all() {
            if !filters.is_empty() && !filters.iter().any(|f| s.name.contains(f.as_str())) {
                continue;
            }
            eprintln!("e2e: {} ({} members) started", s.name, s.members.label());
            order.push(s.name);
            let run = (s.run)();
            let (name, members) = (s.name, s.members);
            tasks.spawn(async move {
                let t = Instant::now();
                let result = match std::panic::AssertUnwindSafe(run).catch_unwind().await {
                    Ok(r) => r.map_err(|e| format!("{e:#}")),
                    Err(_) => Err("the scenario panicked".to_string()),
                };
                Row {
                    scenario: name.to_string(),
                    members: members.label(),
                    result,
                    took: t.elapsed().as_secs_f64(),
                }
            });
        }
        let mut rows = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(row) => {
                    eprintln!(
                        "e2e: {} {} after {:.0} s",
                        row.scenario,
                        if row.passed() { "passed" } else { "FAILED" },
                        row.took
                    );
                    rows.push(row);
                }
                Err(e) => rows.push(Row {
                    scenario: format!("(a scenario panicked: {e})"),
                    members: "-",
                    result: Err("panicked".into()),
                    took: 0.0,
                }),
            }
        }
        rows.sort_by_key(|r| {
            order
                .iter()
                .position(|n| *n == r.scenario)
                .unwrap_or(usize::MAX)
        });
        // Containers are removed as each scenario drops its own; this sweep also
        // catches any a failed scenario left behind.
        let _ = container::remove_stale().await;
        println!("{}", report::table(&rows, started.elapsed().as_secs_f64()));
        rows.iter().any(|r| !r.passed())
    });
    std::process::exit(i32::from(failed));
}
