use super::*;
use tokio::io::BufReader;

const FRM: &str = "frm_0199c4e2f1b7712a9d3e4f5061728394";
const SES: &str = "ses_0199c4e2f1b7712a9d3e4f5061728395";

/// A real HTTP server on 127.0.0.1 serving an Agent Card that names `session`.
async fn door_naming(session: &'static str) -> String {
    let card = card_for(session);
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move || async move { axum::Json(card) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn card_for(session: &str) -> serde_json::Value {
    serde_json::json!({"name": "peer", "capabilities": {"extensions": [
        {"uri": crate::door::SESSION_EXTENSION_URI, "params": {"sessionId": session}}
    ]}})
}

fn line(door: Option<&str>, formation: Option<&str>) -> String {
    serde_json::to_string(&ReadinessLine::new(
        SES,
        door.map(String::from),
        formation.map(String::from),
    ))
    .unwrap()
}

/// Runs `script` as the peer and waits for it with a deadline `limit` from now.
async fn peer(script: &str, limit: Duration) -> Result<Ready, NotReady> {
    // Owned, as every child mur starts is: a process-harness test sweeping this
    // process's strays at the same time must not take it for one.
    let (mut child, _own) = crate::descendants::spawn_owned(
        || {
            crate::spawn::Spawn::new("/bin/sh")
                .args(["-c", script])
                .spawn(None)
        },
        |c| c.id(),
    )
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let started = Instant::now();
    let http = crate::door::client().build().unwrap();
    let result = wait(
        &mut child,
        &mut stdout,
        FRM,
        started,
        started + limit,
        &http,
    )
    .await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    result
}

fn echo_then(text: &str, then: &str) -> String {
    format!("printf '%s\\n' '{text}'; {then}")
}

#[tokio::test]
async fn ready_when_the_door_names_the_session() {
    let door = door_naming(SES).await;
    let script = echo_then(&line(Some(&door), Some(FRM)), "sleep 30");
    let ready = peer(&script, Duration::from_secs(20)).await.unwrap();
    assert_eq!(
        ready,
        Ready {
            session_id: SES.into(),
            door
        }
    );
}

#[tokio::test]
async fn exits_before_it_reports() {
    let err = peer("exit 3", Duration::from_secs(20)).await.unwrap_err();
    assert!(
        matches!(err, NotReady::ExitedBeforeReport(ref s) if s.contains('3')),
        "{err:?}"
    );
}

#[tokio::test]
async fn first_line_is_not_a_readiness_line() {
    let err = peer("echo hello; sleep 30", Duration::from_secs(20))
        .await
        .unwrap_err();
    assert_eq!(err, NotReady::NotReadinessLine("hello".into()));
}

#[tokio::test]
async fn reports_no_door() {
    let err = peer(
        &echo_then(&line(None, Some(FRM)), "sleep 30"),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(err.unwrap_err(), NotReady::NoDoor);
}

#[tokio::test]
async fn reports_another_formation() {
    let door = door_naming(SES).await;
    let other = "frm_0199c4e2f1b7712a9d3e4f5061720000";
    let err = peer(
        &echo_then(&line(Some(&door), Some(other)), "sleep 30"),
        Duration::from_secs(20),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, NotReady::OtherFormation { got: Some(ref g), .. } if g == other),
        "{err:?}"
    );
}

#[tokio::test]
async fn does_not_report_within_the_deadline() {
    let err = peer("sleep 30", Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(err, NotReady::NoReport(Duration::from_millis(300)));
}

#[tokio::test]
async fn exits_after_it_reports_before_its_door_answers() {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let door = format!("http://127.0.0.1:{port}");
    let err = peer(
        &echo_then(&line(Some(&door), Some(FRM)), "exit 0"),
        Duration::from_secs(20),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, NotReady::ExitedAfterReport(_)), "{err:?}");
}

#[tokio::test]
async fn door_answers_as_another_session() {
    let door = door_naming("ses_someone_else").await;
    let err = peer(
        &echo_then(&line(Some(&door), Some(FRM)), "sleep 30"),
        Duration::from_millis(600),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, NotReady::DoorNotAnswering { .. }), "{err:?}");
}

#[test]
fn readiness_lines_round_trip_and_reject_other_json() {
    let l = ReadinessLine::new(SES, Some("http://127.0.0.1:1".into()), None);
    let text = serde_json::to_string(&l).unwrap();
    assert!(
        !text.contains("formation_id"),
        "absent outside a formation: {text}"
    );
    assert_eq!(ReadinessLine::parse(&text), Some(l));
    assert_eq!(ReadinessLine::parse("{\"type\":\"ready\"}"), None);
    assert_eq!(ReadinessLine::parse("not json"), None);
}

#[test]
fn card_names_session_looks_for_the_session_id() {
    let card = card_for(SES);
    assert!(card_names_session(&card, SES));
    assert!(!card_names_session(&card, "ses_other"));
    assert!(!card_names_session(
        &serde_json::json!({"name": SES, "sessionId": SES}),
        SES
    ));
    let other_extension = serde_json::json!({"capabilities": {"extensions": [
        {"uri": "https://example.com/x", "params": {"sessionId": SES}}
    ]}});
    assert!(!card_names_session(&other_extension, SES));
}
