//! One run of a scenario against one target: a connection per named member, the member ids
//! each was handed, and the transcript of what the answers said.
//!
//! A scenario sends requests as named members (`"a"`, `"b"`, `"admin"`); [`Session::call`]
//! sends one, records its normalized answer under a step name and returns the answer itself,
//! for the scenario to take ids and generations from. [`Session::send`] and
//! [`Session::receive`] split a call whose answer is parked (a JoinGroup waiting for the
//! other members) so another member can act meanwhile.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::marker::PhantomData;
use std::net::SocketAddr;

use anyhow::Context;
use kafka_protocol::messages::GroupId;
use kafka_protocol::protocol::Request;
use uuid::Uuid;

use super::observe::{Names, Observation, Observe};
use super::target::{Target, topic_ids};
use crate::{KafkaClient, str};

/// What the scenario knows of one member: its connection, and what the coordinator told it.
#[derive(Default)]
pub struct Member {
    client: Option<KafkaClient>,
    /// The member id it was handed ("" before).
    pub id: String,
    /// The scenario's group it joins ("g" unless [`Session::in_group`] said otherwise).
    pub group: Option<String>,
    /// Its `group.instance.id`, for a static member ([`Session::static_member`]).
    pub instance: Option<String>,
    /// Classic: the generation of its last successful JoinGroup.
    pub generation: i32,
    /// Classic: the protocol its last successful JoinGroup named.
    pub protocol: Option<String>,
    /// Classic: the Assignment bytes of its last SyncGroup answer.
    pub assignment: bytes::Bytes,
    /// Consumer protocol: its member epoch.
    pub epoch: i32,
    /// Consumer protocol: the partitions it owns, by topic id.
    pub owned: BTreeMap<Uuid, BTreeSet<i32>>,
}

/// A request sent and not yet answered.
pub struct Pending<R> {
    member: String,
    correlation_id: i32,
    version: i16,
    request: PhantomData<R>,
}

/// One scenario's run against one target.
pub struct Session {
    pub target: Target,
    addr: SocketAddr,
    pub names: Names,
    members: HashMap<String, Member>,
    /// Partition counts of the scenario's topics, by their short names.
    pub topics: BTreeMap<String, i32>,
    transcript: Vec<Observation>,
}

impl Session {
    /// A session against `addr`; `run` is unique to the scenario (topic prefix), and the
    /// target's tag is added for group ids.
    pub async fn new(
        target: Target,
        addr: SocketAddr,
        run: &str,
        topics: &[(&str, i32)],
    ) -> anyhow::Result<Session> {
        let topic_prefix = format!("{run}-");
        let mut names = Names {
            group_prefix: format!("{run}-{}-", target.tag()),
            topic_prefix: topic_prefix.clone(),
            ..Names::default()
        };
        let mut client = KafkaClient::connect(addr).await?;
        let full: Vec<String> = topics
            .iter()
            .map(|(t, _)| format!("{topic_prefix}{t}"))
            .collect();
        for (name, id, _) in topic_ids(&mut client, full.iter().map(String::as_str)).await? {
            names.topic_ids.insert(id, name);
        }
        anyhow::ensure!(
            names.topic_ids.len() == topics.len(),
            "{target}: Metadata names {:?} of {full:?}",
            names.topic_ids
        );
        Ok(Session {
            target,
            addr,
            names,
            members: HashMap::new(),
            topics: topics.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
            transcript: Vec::new(),
        })
    }

    /// The group id of the scenario's group `name` in this run.
    pub fn group(&self, name: &str) -> GroupId {
        GroupId(str(&self.group_id(name)))
    }

    pub fn group_id(&self, name: &str) -> String {
        format!("{}{name}", self.names.group_prefix)
    }

    /// Member `name`'s requests go to the scenario's group `group` from now on.
    pub fn in_group(&mut self, name: &str, group: &str) {
        self.member(name).group = Some(group.to_owned());
    }

    /// Member `name` is static, with `instance` as its `group.instance.id` in every request.
    pub fn static_member(&mut self, name: &str, instance: &str) {
        self.member(name).instance = Some(instance.to_owned());
    }

    /// Member `name`'s `group.instance.id` (`None`: a dynamic member).
    pub fn instance(&self, name: &str) -> Option<kafka_protocol::protocol::StrBytes> {
        let instance = self.members.get(name).and_then(|m| m.instance.as_deref());
        instance.map(str)
    }

    /// The group id member `name`'s requests go to.
    pub fn group_of(&self, name: &str) -> GroupId {
        let group = self.members.get(name).and_then(|m| m.group.as_deref());
        self.group(group.unwrap_or("g"))
    }

    /// The full name of the scenario's topic `name`.
    pub fn topic(&self, name: &str) -> String {
        format!("{}{name}", self.names.topic_prefix)
    }

    /// The target's id of topic `name`.
    pub fn topic_id(&self, name: &str) -> Uuid {
        let full = self.topic(name);
        self.names
            .topic_ids
            .iter()
            .find(|(_, n)| **n == full)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("no topic {name} in the scenario"))
    }

    pub fn member(&mut self, name: &str) -> &mut Member {
        self.members.entry(name.to_owned()).or_default()
    }

    /// What the scenario knows of member `name`, if it has acted.
    pub fn member_state(&self, name: &str) -> Option<&Member> {
        self.members.get(name)
    }

    /// The id member `name` was handed ("" if none yet).
    pub fn id(&self, name: &str) -> String {
        self.members
            .get(name)
            .map(|m| m.id.clone())
            .unwrap_or_default()
    }

    /// The generation member `name` last joined at (0 if none).
    pub fn generation(&self, name: &str) -> i32 {
        self.members.get(name).map_or(0, |m| m.generation)
    }

    /// Member `name`'s consumer-protocol epoch (0 before it joined).
    pub fn epoch(&self, name: &str) -> i32 {
        self.members.get(name).map_or(0, |m| m.epoch)
    }

    /// Records what the scenario itself worked out (fields already normalized).
    pub fn note(&mut self, step: &str, fields: Vec<(String, String)>) {
        self.transcript.push(Observation {
            step: step.to_owned(),
            api: "note",
            fields,
        });
    }

    /// Sends `request` at `version` as `member`, records the answer as `step`, returns it.
    pub async fn call<R>(
        &mut self,
        member: &str,
        step: &str,
        request: &R,
        version: i16,
    ) -> anyhow::Result<R::Response>
    where
        R: Request,
        R::Response: Observe,
    {
        let pending = self.send(member, request, version).await?;
        self.receive(step, pending).await
    }

    /// As [`Session::call`], recording nothing (the rounds of a wait).
    pub async fn call_quietly<R: Request>(
        &mut self,
        member: &str,
        request: &R,
        version: i16,
    ) -> anyhow::Result<R::Response>
    where
        R::Response: Observe,
    {
        let pending = self.send(member, request, version).await?;
        self.take(pending).await
    }

    /// Sends without waiting for the answer.
    pub async fn send<R: Request>(
        &mut self,
        member: &str,
        request: &R,
        version: i16,
    ) -> anyhow::Result<Pending<R>> {
        let addr = self.addr;
        let state = self.member(member);
        if state.client.is_none() {
            state.client = Some(KafkaClient::connect(addr).await?);
        }
        let client = state.client.as_mut().expect("connected");
        let correlation_id = client.send(request, version).await?;
        Ok(Pending {
            member: member.to_owned(),
            correlation_id,
            version,
            request: PhantomData,
        })
    }

    /// The answer to `pending`, recorded as `step`.
    pub async fn receive<R: Request>(
        &mut self,
        step: &str,
        pending: Pending<R>,
    ) -> anyhow::Result<R::Response>
    where
        R::Response: Observe,
    {
        let version = pending.version;
        let answer = self.take(pending).await?;
        self.record(step, version, &answer);
        Ok(answer)
    }

    /// Records `answer` (to a request sent at `version`) as `step`: the last answer of a
    /// wait, whose earlier rounds are not comparable.
    pub fn record<T: Observe>(&mut self, step: &str, version: i16, answer: &T) {
        let fields = answer.observe(version, &self.names);
        self.transcript.push(Observation {
            step: step.to_owned(),
            api: T::API,
            fields,
        });
    }

    /// Reads the answer to `pending` and binds a member id it hands out.
    async fn take<R: Request>(&mut self, pending: Pending<R>) -> anyhow::Result<R::Response>
    where
        R::Response: Observe,
    {
        let target = self.target;
        let state = self
            .members
            .get_mut(&pending.member)
            .expect("a member that sent");
        let client = state.client.as_mut().expect("sent on it");
        let answer = client
            .receive::<R>(pending.correlation_id, pending.version)
            .await
            .with_context(|| format!("{target}: answer to {}", pending.member))?;
        if let Some(id) = answer.member_id() {
            state.id = id.clone();
            self.names.ids.insert(id, pending.member.clone());
        }
        Ok(answer)
    }

    /// Drops `member`'s connection (a client gone without a word).
    pub fn disconnect(&mut self, member: &str) {
        if let Some(state) = self.members.get_mut(member) {
            state.client = None;
        }
    }

    pub fn into_transcript(self) -> Vec<Observation> {
        self.transcript
    }
}
