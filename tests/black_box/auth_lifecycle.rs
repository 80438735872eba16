//! The life of an API key, black-box: expiry, deletion seen by every core at once,
//! durability across a graceful restart and a kill -9 right after the acknowledgement, and
//! key strings that depend on the master key only (reference §4.2, §4.5).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Connection, HttpResponse, MASTER_KEY, Options, Server, json_request, request};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// How far ahead the expiring key expires: long enough to be used once on a loaded machine.
const EXPIRY_DELAY: Duration = Duration::from_secs(2);

/// Connections opened per check; the kernel spreads them over the server's cores.
const CONNECTIONS_PER_CHECK: usize = 16;

/// Create-use-delete rounds of the deletion test.
const DELETION_ROUNDS: usize = 4;

fn options_with(master_key: &str, cores: usize) -> Options {
    Options {
        master_key: Some(master_key.to_string()),
        cores: Some(cores),
        ..Options::default()
    }
}

fn client_computed_key(master_key: &str, uid: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master_key.as_bytes())
        .expect("new_from_slice succeeds");
    mac.update(uid.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn create_key(server: &Server, master_key: &str, body: Value) -> Value {
    let response = server.raw(&json_request(
        "POST",
        "/keys",
        Some(master_key),
        &body.to_string(),
    ));
    assert_eq!(response.status, 201, "{}", response.text());
    response.json()
}

fn list_keys(server: &Server, master_key: &str) -> Value {
    let response = server.raw(&request("GET", "/keys?limit=100", Some(master_key)));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn version_status(server: &Server, key: &str) -> u16 {
    server.raw(&request("GET", "/version", Some(key))).status
}

fn assert_invalid_api_key(response: &HttpResponse) {
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");
    assert_eq!(
        response.json()["message"],
        "The provided API key is invalid."
    );
}

#[test]
fn an_expiring_key_works_until_it_expires_then_is_refused() {
    let server = Server::start_with(options_with(MASTER_KEY, 2));
    let expires_at = OffsetDateTime::now_utc() + EXPIRY_DELAY;
    let deadline = Instant::now() + EXPIRY_DELAY;
    let key = create_key(
        &server,
        MASTER_KEY,
        json!({"actions": ["version"], "indexes": ["*"], "expiresAt": expires_at.format(&Rfc3339).expect("format succeeds")}),
    );
    let key_string = key["key"]
        .as_str()
        .expect("as_str finds a value of that type");
    let mut used = 0;
    while Instant::now() + Duration::from_millis(300) < deadline && used < CONNECTIONS_PER_CHECK {
        assert_eq!(version_status(&server, key_string), 200);
        used += 1;
    }
    assert!(
        used > 0,
        "the machine is too slow to use the key before it expires"
    );
    std::thread::sleep(
        deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(200),
    );
    for _ in 0..CONNECTIONS_PER_CHECK {
        assert_invalid_api_key(&server.raw(&request("GET", "/version", Some(key_string))));
    }
    // The expired key is still listed: expiry refuses it, it does not delete it.
    let fetched = server.raw(&request(
        "GET",
        &format!(
            "/keys/{}",
            key["uid"]
                .as_str()
                .expect("as_str finds a value of that type")
        ),
        Some(MASTER_KEY),
    ));
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.json(), key);
}

/// Opens `CONNECTIONS_PER_CHECK` keep-alive connections and checks the key works on each.
fn open_connections_using(server: &Server, key: &str) -> Vec<Connection> {
    (0..CONNECTIONS_PER_CHECK)
        .map(|_| {
            let mut connection = server.connect().expect("connect succeeds");
            connection.send(request("GET", "/version", Some(key)).as_bytes());
            assert_eq!(
                connection
                    .read_response()
                    .expect("read_response succeeds")
                    .status,
                200
            );
            connection
        })
        .collect()
}

#[test]
fn a_deleted_key_is_refused_on_the_very_next_request_on_every_core() {
    let server = Server::start_with(options_with(MASTER_KEY, 2));
    for round in 0..DELETION_ROUNDS {
        let key = create_key(
            &server,
            MASTER_KEY,
            json!({"actions": ["version"], "indexes": ["*"], "expiresAt": null}),
        );
        let key_string = key["key"]
            .as_str()
            .expect("as_str finds a value of that type");
        // Connections opened before the deletion, spread over both cores.
        let mut connections = open_connections_using(&server, key_string);
        let deletion = server.raw(&request(
            "DELETE",
            &format!(
                "/keys/{}",
                key["uid"]
                    .as_str()
                    .expect("as_str finds a value of that type")
            ),
            Some(MASTER_KEY),
        ));
        assert_eq!(deletion.status, 204);
        // Right after the acknowledgement: every open connection, then fresh ones.
        let version = request("GET", "/version", Some(key_string));
        for connection in &mut connections {
            connection.send(version.as_bytes());
        }
        for (position, connection) in connections.iter_mut().enumerate() {
            let response = connection.read_response().expect("read_response succeeds");
            assert_eq!(
                response.status, 403,
                "round {round}, open connection {position}: the deleted key was accepted"
            );
        }
        for position in 0..CONNECTIONS_PER_CHECK {
            let response = server.raw(&version);
            assert_eq!(
                response.status, 403,
                "round {round}, fresh connection {position}: the deleted key was accepted"
            );
        }
    }
}

/// Stops `server` (SIGTERM when `graceful`, else SIGKILL) and starts it again on `data`.
fn restart(server: Server, data: &Path, options: &Options, graceful: bool) -> Server {
    if graceful {
        assert!(server.stop().success());
    } else {
        server.kill();
    }
    Server::start_on(data, options)
}

#[test]
fn keys_and_their_strings_survive_a_graceful_restart() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let options = options_with(MASTER_KEY, 2);
    let server = Server::start_on(&data, &options);
    let created = create_key(
        &server,
        MASTER_KEY,
        // `version` is instance-wide: a key restricted to `a*` alone could not hold it.
        json!({"name": "kept", "actions": ["version"], "indexes": ["a*", "*"], "expiresAt": "2050-01-01"}),
    );
    let uid = created["uid"]
        .as_str()
        .expect("as_str finds a value of that type");
    let renamed = server.raw(&json_request(
        "PATCH",
        &format!("/keys/{uid}"),
        Some(MASTER_KEY),
        r#"{"description":"renamed before the restart"}"#,
    ));
    assert_eq!(renamed.status, 200);
    let search_key = list_keys(&server, MASTER_KEY)["results"]
        .as_array()
        .expect("as_array finds a value of that type")
        .iter()
        .find(|key| key["name"] == "Default Search API Key")
        .expect("find finds a value")
        .clone();
    let deleted = server.raw(&request(
        "DELETE",
        &format!(
            "/keys/{}",
            search_key["uid"]
                .as_str()
                .expect("as_str finds a value of that type")
        ),
        Some(MASTER_KEY),
    ));
    assert_eq!(deleted.status, 204);
    let before = list_keys(&server, MASTER_KEY);
    assert_eq!(before["total"], 4);

    let server = restart(server, &data, &options, true);
    assert_eq!(list_keys(&server, MASTER_KEY), before);
    assert_eq!(
        version_status(
            &server,
            created["key"]
                .as_str()
                .expect("as_str finds a value of that type")
        ),
        200
    );
    assert_eq!(
        version_status(
            &server,
            search_key["key"]
                .as_str()
                .expect("as_str finds a value of that type")
        ),
        403
    );
    // The default keys are not recreated over an existing key set.
    let server = restart(server, &data, &options, true);
    assert_eq!(list_keys(&server, MASTER_KEY), before);
}

#[test]
fn an_acknowledged_change_survives_a_kill_9_right_after_its_answer() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let options = options_with(MASTER_KEY, 2);
    let server = Server::start_on(&data, &options);
    let created = create_key(
        &server,
        MASTER_KEY,
        json!({"actions": ["version"], "indexes": ["*"], "expiresAt": null}),
    );
    let server = restart(server, &data, &options, false);
    let key_string = created["key"]
        .as_str()
        .expect("as_str finds a value of that type");
    let uid = created["uid"]
        .as_str()
        .expect("as_str finds a value of that type");
    let fetched = server.raw(&request("GET", &format!("/keys/{uid}"), Some(MASTER_KEY)));
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.json(), created);
    assert_eq!(version_status(&server, key_string), 200);

    let deleted = server.raw(&request(
        "DELETE",
        &format!("/keys/{uid}"),
        Some(MASTER_KEY),
    ));
    assert_eq!(deleted.status, 204);
    let server = restart(server, &data, &options, false);
    let fetched = server.raw(&request("GET", &format!("/keys/{uid}"), Some(MASTER_KEY)));
    assert_eq!(fetched.status, 404);
    assert_eq!(version_status(&server, key_string), 403);
}

#[test]
fn changing_the_master_key_changes_every_key_string() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let first_master = "first-master-key-0123456789";
    let second_master = "second-master-key-0123456789";
    let server = Server::start_on(&data, &options_with(first_master, 2));
    create_key(
        &server,
        first_master,
        json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null}),
    );
    let before = list_keys(&server, first_master);
    let server = restart(server, &data, &options_with(second_master, 2), true);
    assert_eq!(version_status(&server, first_master), 403);
    let after = list_keys(&server, second_master);
    let before = before["results"]
        .as_array()
        .expect("as_array finds a value of that type");
    let after = after["results"]
        .as_array()
        .expect("as_array finds a value of that type");
    assert_eq!(before.len(), after.len());
    for (old, new) in before.iter().zip(after) {
        let uid = new["uid"]
            .as_str()
            .expect("as_str finds a value of that type");
        assert_eq!(old["uid"], new["uid"]);
        assert_eq!(new["key"], client_computed_key(second_master, uid));
        assert_ne!(old["key"], new["key"]);
        for field in [
            "name",
            "description",
            "actions",
            "indexes",
            "expiresAt",
            "createdAt",
            "updatedAt",
        ] {
            assert_eq!(old[field], new[field], "{field}");
        }
        let old_key = old["key"]
            .as_str()
            .expect("as_str finds a value of that type");
        assert_invalid_api_key(&server.raw(&request("GET", "/version", Some(old_key))));
        let old_key_path = format!("/keys/{old_key}");
        assert_eq!(
            server
                .raw(&request("GET", &old_key_path, Some(second_master)))
                .status,
            404
        );
    }
    let admin = after
        .iter()
        .find(|key| key["actions"] == json!(["*"]))
        .expect("find finds a value");
    assert_eq!(
        version_status(
            &server,
            admin["key"]
                .as_str()
                .expect("as_str finds a value of that type")
        ),
        200
    );
}
