//! Kafka's authorizer rules, case by case (the cases of Kafka's `StandardAuthorizerTest` that
//! apply to the resources the host answers for).

use super::*;
use AclOperation::*;
use ResourceType::*;

fn acl(
    permission: Permission,
    principal: &str,
    operation: AclOperation,
    kind: ResourceType,
    name: &str,
    pattern: PatternType,
) -> AclBinding {
    AclBinding {
        resource_type: kind,
        resource_name: name.to_owned(),
        pattern_type: pattern,
        principal: principal.to_owned(),
        host: "*".to_owned(),
        operation,
        permission,
    }
}

fn allow(principal: &str, operation: AclOperation, kind: ResourceType, name: &str) -> AclBinding {
    acl(
        Permission::Allow,
        principal,
        operation,
        kind,
        name,
        PatternType::Literal,
    )
}

fn deny(principal: &str, operation: AclOperation, kind: ResourceType, name: &str) -> AclBinding {
    acl(
        Permission::Deny,
        principal,
        operation,
        kind,
        name,
        PatternType::Literal,
    )
}

fn acls(bindings: &[AclBinding], allow_everyone: bool) -> Arc<Acls> {
    let acls = Acls::open(
        None,
        AclSettings {
            allow_everyone_if_no_acl_found: allow_everyone,
            super_users: vec!["User:admin".into()],
        },
    )
    .unwrap();
    acls.add(bindings).unwrap();
    acls
}

const ALICE: &str = "User:alice";
const HOST: &str = "10.0.0.1";

#[test]
fn an_allow_allows_its_operation_and_nothing_else() {
    let acls = acls(&[allow(ALICE, Read, Topic, "orders")], false);
    assert!(acls.authorize(ALICE, HOST, Read, Topic, "orders"));
    assert!(!acls.authorize(ALICE, HOST, Write, Topic, "orders"));
    assert!(!acls.authorize(ALICE, HOST, Read, Topic, "orders2"));
    assert!(!acls.authorize(ALICE, HOST, Read, Group, "orders"));
    assert!(!acls.authorize("User:bob", HOST, Read, Topic, "orders"));
}

#[test]
fn read_write_delete_and_alter_imply_describe_and_alter_configs_implies_describe_configs() {
    for operation in [Read, Write, Delete, Alter] {
        let acls = acls(&[allow(ALICE, operation, Topic, "t")], false);
        assert!(
            acls.authorize(ALICE, HOST, Describe, Topic, "t"),
            "{operation:?}"
        );
    }
    for operation in [Create, DescribeConfigs, AlterConfigs] {
        let acls = acls(&[allow(ALICE, operation, Topic, "t")], false);
        assert!(
            !acls.authorize(ALICE, HOST, Describe, Topic, "t"),
            "{operation:?}"
        );
    }
    let acls = acls(&[allow(ALICE, AlterConfigs, Topic, "t")], false);
    assert!(acls.authorize(ALICE, HOST, DescribeConfigs, Topic, "t"));
    // Describe implies nothing.
    let acls = self::acls(&[allow(ALICE, Describe, Group, "g")], false);
    assert!(!acls.authorize(ALICE, HOST, Read, Group, "g"));
}

#[test]
fn deny_wins_and_denies_only_its_own_operation_or_all() {
    let acls = acls(
        &[allow(ALICE, All, Topic, "t"), deny(ALICE, Read, Topic, "t")],
        false,
    );
    assert!(!acls.authorize(ALICE, HOST, Read, Topic, "t"));
    assert!(acls.authorize(ALICE, HOST, Write, Topic, "t"));
    // A DENY of READ does not deny the DESCRIBE that ALL allows.
    assert!(acls.authorize(ALICE, HOST, Describe, Topic, "t"));
    let acls = self::acls(
        &[
            allow(ALICE, Read, Topic, "t"),
            deny("User:*", All, Topic, "t"),
        ],
        false,
    );
    assert!(!acls.authorize(ALICE, HOST, Read, Topic, "t"));
    assert!(!acls.authorize(ALICE, HOST, Describe, Topic, "t"));
}

#[test]
fn prefixed_wildcard_and_principal_wildcard_patterns_match() {
    let acls = acls(
        &[
            acl(
                Permission::Allow,
                ALICE,
                Read,
                Group,
                "app-",
                PatternType::Prefixed,
            ),
            allow("User:*", Describe, Topic, "*"),
        ],
        false,
    );
    assert!(acls.authorize(ALICE, HOST, Read, Group, "app-1"));
    assert!(acls.authorize(ALICE, HOST, Read, Group, "app-"));
    assert!(!acls.authorize(ALICE, HOST, Read, Group, "ap"));
    assert!(!acls.authorize(ALICE, HOST, Read, Group, "other"));
    assert!(acls.authorize("User:bob", HOST, Describe, Topic, "anything"));
    // A literal `*` is a wildcard; a prefixed `*` is the character.
    let acls = self::acls(
        &[acl(
            Permission::Allow,
            ALICE,
            Read,
            Topic,
            "*",
            PatternType::Prefixed,
        )],
        false,
    );
    assert!(!acls.authorize(ALICE, HOST, Read, Topic, "orders"));
    assert!(acls.authorize(ALICE, HOST, Read, Topic, "*orders"));
}

#[test]
fn the_host_must_match_unless_it_is_a_wildcard() {
    let mut binding = allow(ALICE, Read, Topic, "t");
    binding.host = "10.0.0.2".into();
    let acls = acls(&[binding], false);
    assert!(!acls.authorize(ALICE, HOST, Read, Topic, "t"));
    assert!(acls.authorize(ALICE, "10.0.0.2", Read, Topic, "t"));
}

#[test]
fn with_no_acl_on_the_resource_the_setting_decides_and_any_acl_there_denies_the_rest() {
    let open = acls(&[allow("User:bob", Read, Topic, "bobs")], true);
    assert!(open.authorize(ALICE, HOST, Read, Topic, "orders"));
    assert!(open.authorize(ALICE, HOST, Delete, Group, "g"));
    // bob's ACL on `bobs` makes it a resource with ACLs: alice is denied there.
    assert!(!open.authorize(ALICE, HOST, Read, Topic, "bobs"));
    // A prefixed ACL covers the names under it the same way.
    let open = acls(
        &[acl(
            Permission::Allow,
            "User:bob",
            Read,
            Topic,
            "bob-",
            PatternType::Prefixed,
        )],
        true,
    );
    assert!(!open.authorize(ALICE, HOST, Read, Topic, "bob-x"));
    let closed = acls(&[], false);
    assert!(!closed.authorize(ALICE, HOST, Read, Topic, "orders"));
}

#[test]
fn super_users_may_do_everything_even_when_denied() {
    let acls = acls(&[deny("User:admin", All, Topic, "t")], false);
    assert!(acls.authorize("User:admin", HOST, Read, Topic, "t"));
    assert!(acls.authorize("User:admin", HOST, Delete, Group, "g"));
}

#[test]
fn bindings_kafka_acls_refuses_are_refused_and_none_of_a_batch_is_added() {
    let acls = acls(&[], false);
    let mut bad_principal = allow("alice", Read, Topic, "t");
    let mut bad_host = allow(ALICE, Read, Topic, "t");
    bad_host.host = "example.com".into();
    let wrong_operation = allow(ALICE, Write, Group, "g");
    let cluster_name = allow(ALICE, Create, Cluster, "other");
    for (binding, needle) in [
        (bad_principal.clone(), "TYPE:NAME"),
        (bad_host, "IP address"),
        (wrong_operation, "is not an operation on a Group"),
        (cluster_name, "kafka-cluster"),
    ] {
        let error = acls
            .add(&[allow(ALICE, Read, Topic, "fine"), binding])
            .unwrap_err();
        assert!(error.to_string().contains(needle), "{error}");
    }
    assert!(acls.list().is_empty());
    bad_principal.principal = "User:".into();
    assert!(acls.add(&[bad_principal]).is_err());
    assert_eq!(
        acls.add(&[allow(ALICE, Create, Cluster, CLUSTER_NAME)]),
        Ok(1)
    );
}

#[test]
fn adding_twice_counts_once_removing_is_exact_and_the_store_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let settings = AclSettings::default();
    let read = allow(ALICE, Read, Topic, "t");
    let describe = allow(ALICE, Describe, Group, "g");
    {
        let acls = Acls::open(Some(Store::open(dir.path()).unwrap()), settings.clone()).unwrap();
        assert_eq!(acls.add(&[read.clone(), describe.clone()]), Ok(2));
        assert_eq!(acls.add(std::slice::from_ref(&read)), Ok(0));
        let mut other_host = read.clone();
        other_host.host = "10.0.0.9".into();
        assert_eq!(acls.remove(&[other_host]), Ok(vec![]));
        assert_eq!(
            acls.remove(std::slice::from_ref(&describe)),
            Ok(vec![describe.clone()])
        );
    }
    let acls = Acls::open(Some(Store::open(dir.path()).unwrap()), settings).unwrap();
    assert_eq!(acls.list(), vec![read]);
}

#[test]
fn operations_parse_in_kafkas_spellings() {
    for (text, operation) in [
        ("Read", Read),
        ("READ", Read),
        ("DescribeConfigs", DescribeConfigs),
        ("describe_configs", DescribeConfigs),
        ("IDEMPOTENT_WRITE", IdempotentWrite),
        ("All", All),
    ] {
        assert_eq!(AclOperation::parse(text), Some(operation), "{text}");
    }
    assert_eq!(AclOperation::parse("Obliterate"), None);
}
