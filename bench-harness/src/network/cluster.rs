//! A sharded network of local instances of one server binary on loopback: started, each
//! with the `network` experimental feature on, joined by the leader's `PATCH /network`, and
//! stopped together.
//!
//! Invariants: instance `i` listens on `base_port + i`, lives in `work_dir/ms{i}` and is
//! pinned as [`placement`] says for the network's size; every instance allows outgoing
//! requests to loopback (`--experimental-allowed-ip-networks 127.0.0.0/8`, without which
//! both servers refuse to call a loopback remote); the network is formed only once every
//! instance is healthy, and [`Cluster::wait_idle`] returns only when no instance has a task
//! enqueued or processing and none has a failed task. Dropping the cluster stops every
//! instance (each process guard's drop).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::placement::placement;
use super::topology::{forming_body, instance_name};
use crate::compare::client::Client;
use crate::compare::server::{ServerKind, ServerProcess, ServerSpec};
use crate::compare::setup::{expect_status, get_json, wait_for_tasks};

/// The longest wait for one request of the setup (index creation, a network change's
/// answer, a task poll).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The networks the instances may call: loopback, where the other instances listen.
pub const ALLOWED_IP_NETWORKS: &str = "127.0.0.0/8";

/// How to start the instances of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    /// Which server.
    pub kind: ServerKind,
    /// Its binary.
    pub binary: PathBuf,
    /// The directory holding one directory per instance (emptied per instance at its start).
    pub work_dir: PathBuf,
    /// The port of instance 0; instance `i` listens on `base_port + i`.
    pub base_port: u16,
    /// The master key of every instance, also every remote's search and write key.
    pub master_key: String,
    /// The CPUs of the machine, shared by the instances.
    pub machine_cpus: usize,
}

/// One running instance.
#[derive(Debug)]
pub struct Instance {
    /// Its remote name.
    pub name: String,
    /// Its process.
    pub process: ServerProcess,
    /// A client of it, with the master key.
    pub client: Client,
    /// The CPUs it is pinned to.
    pub cpu_list: String,
    /// The cores it was told to use.
    pub cores: usize,
}

impl Instance {
    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.process.spec.address())
    }
}

/// The running instances of a network, the leader first.
#[derive(Debug)]
pub struct Cluster {
    /// How they were started.
    pub spec: ClusterSpec,
    /// The instances, in remote-name order.
    pub instances: Vec<Instance>,
}

/// The spec of instance `instance` when the network will have `size` instances.
fn instance_spec(spec: &ClusterSpec, instance: usize, size: usize) -> Result<ServerSpec, String> {
    let place = placement(instance, size, spec.machine_cpus);
    let offset = u16::try_from(instance).map_err(|_| "too many instances".to_string())?;
    Ok(ServerSpec {
        kind: spec.kind,
        binary: spec.binary.clone(),
        work_dir: spec.work_dir.join(instance_name(instance)),
        port: spec
            .base_port
            .checked_add(offset)
            .ok_or_else(|| "the ports run past 65535".to_string())?,
        cores: Some(place.cores),
        master_key: Some(spec.master_key.clone()),
        extra_arguments: vec![
            OsString::from("--experimental-allowed-ip-networks"),
            OsString::from(ALLOWED_IP_NETWORKS),
        ],
        cpu_list: Some(place.cpu_list),
    })
}

/// Starts instance `instance` of a network of `size`, and turns its `network` feature on.
fn start_instance(spec: &ClusterSpec, instance: usize, size: usize) -> Result<Instance, String> {
    let server_spec = instance_spec(spec, instance, size)?;
    let name = instance_name(instance);
    let process = ServerProcess::start(&server_spec).map_err(|error| format!("{name}: {error}"))?;
    let mut client = Client::new(
        server_spec.address(),
        Some(spec.master_key.clone()),
        REQUEST_TIMEOUT,
    );
    let response = client
        .send_json("PATCH", "/experimental-features", &json!({"network": true}))
        .map_err(|error| format!("{name}: enable network: {error}"))?;
    expect_status(&format!("{name}: enable network"), &response, 200)?;
    Ok(Instance {
        name,
        process,
        client,
        cpu_list: server_spec.cpu_list.unwrap_or_default(),
        cores: server_spec.cores.unwrap_or_default(),
    })
}

impl Cluster {
    /// Starts `size` instances and forms them into a network of one shard each, `ms0`
    /// leading; returns once every instance finished its network change.
    pub fn start(spec: &ClusterSpec, size: usize) -> Result<Cluster, String> {
        let mut instances = Vec::with_capacity(size);
        for instance in 0..size {
            instances.push(start_instance(spec, instance, size)?);
        }
        let mut cluster = Cluster {
            spec: spec.clone(),
            instances,
        };
        let body = forming_body(&cluster.urls(), &spec.master_key);
        cluster.leader_patch_network(&body)?;
        cluster.wait_idle()?;
        Ok(cluster)
    }

    /// Starts `count` more instances, placed for a network of the final size, with their
    /// `network` feature on (not yet part of the network).
    pub fn add_instances(&mut self, count: usize) -> Result<(), String> {
        let size = self.instances.len() + count;
        for instance in self.instances.len()..size {
            let started = start_instance(&self.spec, instance, size)?;
            self.instances.push(started);
        }
        Ok(())
    }

    /// Every instance's base URL, in order.
    pub fn urls(&self) -> Vec<String> {
        self.instances.iter().map(Instance::url).collect()
    }

    /// Every instance's `(name, pid)`.
    pub fn processes(&self) -> Vec<(String, u32)> {
        self.instances
            .iter()
            .map(|instance| (instance.name.clone(), instance.process.pid))
            .collect()
    }

    /// The leader.
    pub fn leader(&mut self) -> Result<&mut Instance, String> {
        self.instances
            .first_mut()
            .ok_or_else(|| "the network has no instance".to_string())
    }

    /// Sends `body` as the leader's `PATCH /network`; answers the task it registered.
    pub fn leader_patch_network(&mut self, body: &Value) -> Result<Value, String> {
        let leader = self.leader()?;
        let response = leader
            .client
            .send_json("PATCH", "/network", body)
            .map_err(|error| format!("PATCH /network: {error}"))?;
        expect_status("PATCH /network", &response, 202)?;
        response.json()
    }

    /// Waits until no instance has a task enqueued or processing, and checks that none failed.
    pub fn wait_idle(&mut self) -> Result<(), String> {
        for instance in &mut self.instances {
            wait_for_tasks(&mut instance.client)
                .map_err(|error| format!("{}: {error}", instance.name))?;
        }
        Ok(())
    }

    /// Whether any instance has a task enqueued or processing.
    pub fn any_task_pending(&mut self) -> Result<bool, String> {
        for instance in &mut self.instances {
            let pending = get_json(
                &mut instance.client,
                "/tasks?statuses=enqueued,processing&limit=1",
            )
            .map_err(|error| format!("{}: {error}", instance.name))?;
            if pending["total"] != 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The documents each instance holds in index `uid` (its own shard only).
    pub fn document_counts(&mut self, uid: &str) -> Result<Vec<u64>, String> {
        let path = format!("/indexes/{uid}/stats");
        self.instances
            .iter_mut()
            .map(|instance| {
                let stats = get_json(&mut instance.client, &path)
                    .map_err(|error| format!("{}: {error}", instance.name))?;
                stats["numberOfDocuments"]
                    .as_u64()
                    .ok_or_else(|| format!("{}: stats without numberOfDocuments", instance.name))
            })
            .collect()
    }

    /// The server's version, as the leader reports it.
    pub fn version(&mut self) -> Option<String> {
        let leader = self.leader().ok()?;
        get_json(&mut leader.client, "/version")
            .ok()
            .and_then(|answer| answer["pkgVersion"].as_str().map(str::to_string))
    }

    /// Stops every instance, the followers first.
    pub fn stop(mut self) {
        while let Some(mut instance) = self.instances.pop() {
            instance.process.stop();
        }
    }
}
