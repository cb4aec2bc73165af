//! The integration tests, one binary (as ripgrep's tests/tests.rs and uv's
//! tests/it/main.rs): one link step, one module per area, one harness: the crate
//! crates/mur-test, named `support` here.

// Tests use some of the dev-dependencies each, and print what a failure needs.
#![allow(
    unused_crate_dependencies,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

use mur_test as support;

mod a2a_sdk;
mod a2a_wire;
mod admission;
mod agent_card_skills;
mod approval;
mod cache_prune;
mod call_member;
mod capsule_names;
mod catalogue_docs;
mod completion;
mod components;
mod confine;
mod confine_session;
mod crash;
mod delegation;
mod delegation_limits;
mod descendants;
mod did_you_mean;
mod docs_howtos;
mod docs_pages;
mod door_a2a;
mod door_auth;
mod door_bad_input;
mod door_trust;
mod env_docs;
mod exit_contract;
mod first_hour;
mod formation_cli;
mod formation_learns;
mod formation_real;
mod fuzz_regressions;
mod grants;
mod help;
mod hostile;
mod human_output;
mod ids;
mod kube;
mod launch;
mod launch_checks;
mod lock_cli;
mod lock_refusal;
mod logs;
mod manifest;
mod member_exits;
mod models;
mod modes;
mod module_graph;
mod native_harness;
mod new;
mod pid1;
mod pipe;
mod project_discovery;
mod ps_and_trace_show;
mod ps_scope;
mod run_formation;
mod run_session;
mod send;
mod shell;
mod store_cli;
mod sync_cli;
mod trace_export;
mod trace_live;
mod wait_cycles;
