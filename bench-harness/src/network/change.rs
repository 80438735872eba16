//! Growing a filled network by new instances, each with a shard of its own, and timing the
//! `networkTopologyChange` that moves the documents the new shards win.
//!
//! Two times are measured from just before the leader's `PATCH /network` is sent: until
//! every instance's change task of that PATCH has succeeded, and until every instance is
//! idle (a server may delete what it gave up in tasks registered after its change task, as
//! coresearch does). Invariants: a change task counts only when it is newer than the
//! instance's latest change before the PATCH; a change that fails or is canceled on any
//! instance, or does not end within the timeout, fails the measurement; other tasks that
//! fail during the change (registered after the instance's latest task before the PATCH)
//! do not fail it but are reported; afterwards the documents held by the instances must
//! add up to the documents the network held before, and the index settings of every
//! instance are compared with the leader's (a change that leaves an instance with other
//! settings makes its shard answer differently). Between the polls, the leader is asked
//! how many documents a network search sees ([`Visibility`]), from the PATCH until idle.
//!
//! With `precreate_index`, the index (same primary key and settings) is created on each new
//! instance before it joins, outside the timed window: Meilisearch 1.41 fails the change of
//! a new instance that two exporters both create the index on (the second creation fails
//! with `index_already_exists` and fails the instance's `networkTopologyChange`), and an
//! existing index is how its exporters skip that step.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::cluster::{Cluster, Instance};
use super::ingestion::PRIMARY_KEY;
use super::resources::{InstanceUsage, UsageMeter};
use super::topology::growing_body;
use super::visibility::Visibility;
use crate::compare::setup::{comparison_settings, create_index, get_json};

/// Pause between two polls of the instances' change tasks.
const CHANGE_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Where an instance's latest network change is read.
const LATEST_CHANGE_PATH: &str = "/tasks?types=networkTopologyChange&limit=1";
/// Where an instance's latest task is read.
const LATEST_TASK_PATH: &str = "/tasks?limit=1";
/// Where an instance's latest failed tasks are read (more than a change leaves behind).
const FAILED_TASKS_PATH: &str = "/tasks?statuses=failed&limit=100";

/// One instance's part in the change.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceChange {
    /// The instance's remote name.
    pub name: String,
    /// Its change task's uid.
    pub task_uid: u64,
    /// From the PATCH until this instance's change task was seen succeeded.
    pub succeeded_after: Duration,
    /// The task's own `duration` (ISO 8601, as the server reports it).
    pub task_duration: Option<String>,
    /// `details.movedDocuments`.
    pub moved_documents: Option<u64>,
}

/// What the change took.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeOutcome {
    /// Instances before and after.
    pub instances_before: usize,
    /// Instances after.
    pub instances_after: usize,
    /// From the PATCH until every change task succeeded.
    pub changes_succeeded_after: Duration,
    /// From the PATCH until every instance was idle.
    pub idle_after: Duration,
    /// Each instance's change.
    pub changes: Vec<InstanceChange>,
    /// Each instance's CPU and peak memory from the PATCH until idle.
    pub usage: Vec<InstanceUsage>,
    /// Documents each instance held before (the new ones: 0).
    pub held_before: Vec<u64>,
    /// Documents each instance holds afterwards.
    pub held_after: Vec<u64>,
    /// Whether the index was created on the new instances before the change.
    pub precreated_index: bool,
    /// Tasks that failed during the change, per instance: `type: error code` each.
    pub failed_tasks: Vec<Vec<String>>,
    /// What a network search through the leader saw from the PATCH until idle.
    pub visibility: Visibility,
    /// Instances whose index settings differ from the leader's after the change.
    pub settings_differ: Vec<String>,
}

/// The uid of the first task `path` lists on the instance, if any.
fn first_uid(instance: &mut Instance, path: &str) -> Result<Option<u64>, String> {
    let page = get_json(&mut instance.client, path)
        .map_err(|error| format!("{}: {error}", instance.name))?;
    Ok(page["results"][0]["uid"].as_u64())
}

/// The instance's failed tasks newer than `before`, as `type: error code`.
fn failed_since(instance: &mut Instance, before: Option<u64>) -> Result<Vec<String>, String> {
    let page = get_json(&mut instance.client, FAILED_TASKS_PATH)
        .map_err(|error| format!("{}: {error}", instance.name))?;
    let tasks = page["results"].as_array().cloned().unwrap_or_default();
    Ok(tasks
        .iter()
        .filter(|task| {
            let uid = task["uid"].as_u64();
            before.is_none_or(|before| uid.is_some_and(|uid| uid > before))
        })
        .map(|task| {
            format!(
                "{}: {}",
                task["type"].as_str().unwrap_or("?"),
                task["error"]["code"].as_str().unwrap_or("?")
            )
        })
        .collect())
}

/// The instances whose settings of index `uid` differ from the leader's.
fn settings_differing(cluster: &mut Cluster, uid: &str) -> Result<Vec<String>, String> {
    let path = format!("/indexes/{uid}/settings");
    let mut settings = Vec::with_capacity(cluster.instances.len());
    for instance in &mut cluster.instances {
        let answer = get_json(&mut instance.client, &path)
            .map_err(|error| format!("{}: {error}", instance.name))?;
        settings.push((instance.name.clone(), answer));
    }
    let Some((_, leader)) = settings.first() else {
        return Ok(Vec::new());
    };
    Ok(settings
        .iter()
        .filter(|(_, answer)| answer != leader)
        .map(|(name, _)| name.clone())
        .collect())
}

/// The instance's latest change when it is newer than `before` and finished; an error when
/// it failed or was canceled.
fn finished_change(instance: &mut Instance, before: Option<u64>) -> Result<Option<Value>, String> {
    let page = get_json(&mut instance.client, LATEST_CHANGE_PATH)
        .map_err(|error| format!("{}: {error}", instance.name))?;
    let task = &page["results"][0];
    let Some(uid) = task["uid"].as_u64() else {
        return Ok(None);
    };
    if before.is_some_and(|before| uid <= before) {
        return Ok(None);
    }
    match task["status"].as_str() {
        Some("succeeded") => Ok(Some(task.clone())),
        Some("failed" | "canceled") => Err(format!("{}: the change ended {task}", instance.name)),
        _ => Ok(None),
    }
}

/// How the polls of a change go.
struct Watch<'a> {
    uid: &'a str,
    started: Instant,
    timeout: Duration,
    visibility: Visibility,
}

impl Watch<'_> {
    /// Samples what a search sees, and fails once the timeout has passed.
    fn tick(&mut self, cluster: &mut Cluster, waiting_for: &str) -> Result<(), String> {
        if let Ok(leader) = cluster.leader() {
            self.visibility.sample(leader, self.uid);
        }
        if self.started.elapsed() > self.timeout {
            return Err(format!(
                "the change did not end within {:?}: {waiting_for}",
                self.timeout
            ));
        }
        std::thread::sleep(CHANGE_POLL_INTERVAL);
        Ok(())
    }
}

/// Polls every instance until its change after `before` succeeded.
fn wait_for_changes(
    cluster: &mut Cluster,
    before: &[Option<u64>],
    watch: &mut Watch<'_>,
) -> Result<Vec<InstanceChange>, String> {
    let started = watch.started;
    let mut changes: Vec<Option<InstanceChange>> = vec![None; cluster.instances.len()];
    while changes.iter().any(Option::is_none) {
        for ((instance, before), change) in
            cluster.instances.iter_mut().zip(before).zip(&mut changes)
        {
            if change.is_some() {
                continue;
            }
            if let Some(task) = finished_change(instance, *before)? {
                *change = Some(InstanceChange {
                    name: instance.name.clone(),
                    task_uid: task["uid"].as_u64().unwrap_or_default(),
                    succeeded_after: started.elapsed(),
                    task_duration: task["duration"].as_str().map(str::to_string),
                    moved_documents: task["details"]["movedDocuments"].as_u64(),
                });
            }
        }
        if changes.iter().any(Option::is_none) {
            watch.tick(cluster, &format!("{changes:?}"))?;
        }
    }
    Ok(changes.into_iter().flatten().collect())
}

/// Polls until no instance has a task enqueued or processing.
fn wait_until_idle(cluster: &mut Cluster, watch: &mut Watch<'_>) -> Result<(), String> {
    while cluster.any_task_pending()? {
        watch.tick(cluster, "tasks still pending")?;
    }
    Ok(())
}

/// Adds `added` instances to the network, each owning a new shard (with index `uid`
/// created on them first when `precreate_index`), and measures the change until every
/// instance is idle again.
pub fn grow(
    cluster: &mut Cluster,
    added: usize,
    uid: &str,
    precreate_index: bool,
    timeout: Duration,
) -> Result<ChangeOutcome, String> {
    let instances_before = cluster.instances.len();
    let mut held_before = cluster.document_counts(uid)?;
    cluster.add_instances(added)?;
    held_before.resize(cluster.instances.len(), 0);
    if precreate_index {
        for instance in &mut cluster.instances[instances_before..] {
            create_index(
                &mut instance.client,
                uid,
                PRIMARY_KEY,
                &comparison_settings(),
            )
            .map_err(|error| format!("{}: {error}", instance.name))?;
        }
    }
    let before = cluster
        .instances
        .iter_mut()
        .map(|instance| first_uid(instance, LATEST_CHANGE_PATH))
        .collect::<Result<Vec<_>, String>>()?;
    let last_task_before = cluster
        .instances
        .iter_mut()
        .map(|instance| first_uid(instance, LATEST_TASK_PATH))
        .collect::<Result<Vec<_>, String>>()?;
    let body = growing_body(&cluster.urls(), &cluster.spec.master_key);
    let meter = UsageMeter::start(&cluster.processes())?;
    let started = Instant::now();
    let mut watch = Watch {
        uid,
        started,
        timeout,
        visibility: Visibility::default(),
    };
    cluster.leader_patch_network(&body)?;
    let changes = wait_for_changes(cluster, &before, &mut watch)?;
    let changes_succeeded_after = started.elapsed();
    wait_until_idle(cluster, &mut watch)?;
    let idle_after = started.elapsed();
    let usage = meter.finish();
    let failed_tasks = cluster
        .instances
        .iter_mut()
        .zip(&last_task_before)
        .map(|(instance, before)| failed_since(instance, *before))
        .collect::<Result<Vec<_>, String>>()?;
    let held_after = cluster.document_counts(uid)?;
    let settings_differ = settings_differing(cluster, uid)?;
    let (sum_before, sum_after) = (
        held_before.iter().sum::<u64>(),
        held_after.iter().sum::<u64>(),
    );
    if sum_before != sum_after {
        return Err(format!(
            "the network held {sum_before} documents before the change and {sum_after} after ({held_after:?})"
        ));
    }
    Ok(ChangeOutcome {
        instances_before,
        instances_after: cluster.instances.len(),
        changes_succeeded_after,
        idle_after,
        changes,
        usage,
        held_before,
        held_after,
        precreated_index: precreate_index,
        failed_tasks,
        visibility: watch.visibility,
        settings_differ,
    })
}
