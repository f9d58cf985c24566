//! Client spellings of strategy names: the one table of aliases.
//!
//! A Kafka client proposes strategies by protocol name, and a few clients spell a standard
//! strategy their own way. Each spelling here maps to the canonical name of the module that
//! serves it, so a group mixing clients still agrees on one strategy (the coordinator
//! normalizes votes through this table and echoes each member's own spelling back).
//! Java, librdkafka, kafka-python, aiokafka, Sarama and franz-go all use Kafka's names
//! (`range`, `roundrobin`, `sticky`, `cooperative-sticky`), so they need no alias.

/// One client spelling of a canonical strategy name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    /// What the client sends in JoinGroup.
    pub spelling: &'static str,
    /// The module name it stands for.
    pub canonical: &'static str,
    /// Where the spelling comes from.
    pub source: &'static str,
}

/// Every alias the host knows.
pub const ALIASES: &[Alias] = &[Alias {
    spelling: "RoundRobinAssigner",
    canonical: "roundrobin",
    source: "kafkajs: the `name` of its default assigner, `PartitionAssigners.roundRobin` \
             (src/consumer/assigners/roundRobinAssigner/index.js)",
}];

/// The canonical name `spelling` stands for, if it is an alias.
pub fn canonical(spelling: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|a| a.spelling == spelling)
        .map(|a| a.canonical)
}
