//! The host's parts (its top-level modules) against `docs/architecture.md`: no circle among
//! the files of a part, the coordinator a ladder with `dispatch` on top, and the arrows between
//! parts exactly the documented ones.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use assignor_architecture::workspace::root;
use assignor_architecture::{Graph, ModPath, arrows, find_cycle, name};

fn host() -> Graph {
    Graph::read(&root().join("host/src/lib.rs"))
}

fn document() -> String {
    let path = root().join("docs/architecture.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_part_of_the_host_imports_in_a_circle() {
    let graph = host();
    let edges = graph.edges();
    let parts: BTreeSet<String> = graph.modules().filter_map(|p| p.first().cloned()).collect();
    assert!(parts.contains("coordinator"), "{parts:?}");
    let circles: Vec<String> = parts
        .iter()
        .filter_map(|part| find_cycle(part, &edges))
        .map(|cycle| cycle.iter().map(name).collect::<Vec<_>>().join(" -> "))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_coordinator_is_a_ladder_with_dispatch_on_top() {
    let graph = host();
    let edges = graph.edges();
    let dispatch: ModPath = vec!["coordinator".into(), "dispatch".into()];
    let into_dispatch: Vec<String> = edges
        .iter()
        .filter(|(from, to)| {
            *to == dispatch && *from != dispatch && from.first() == dispatch.first()
        })
        .map(|(from, _)| name(from))
        .collect();
    assert!(
        into_dispatch.is_empty(),
        "dispatch.rs is the top of the coordinator; these coordinator files import it: \
         {into_dispatch:?}"
    );
}

#[test]
fn arrows_between_parts_are_the_documented_ones() {
    let graph = host();
    let mut actual: BTreeSet<(String, String)> = BTreeSet::new();
    let mut examples: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, to) in graph.edges() {
        let (Some(a), Some(b)) = (from.first(), to.first()) else {
            continue;
        };
        if a != b {
            let arrow = (a.clone(), b.clone());
            examples
                .entry(arrow.clone())
                .or_insert_with(|| format!("{} -> {}", name(&from), name(&to)));
            actual.insert(arrow);
        }
    }
    let doc = document();
    let allowed = arrows(&doc, "arrows");
    let never = arrows(&doc, "never");
    let contradictions: Vec<_> = allowed.intersection(&never).collect();
    assert!(
        contradictions.is_empty(),
        "both allowed and forbidden: {contradictions:?}"
    );
    let forbidden: Vec<String> = actual
        .intersection(&never)
        .map(|arrow| examples[arrow].clone())
        .collect();
    assert!(
        forbidden.is_empty(),
        "arrows docs/architecture.md forbids:\n{}",
        forbidden.join("\n")
    );
    let undocumented: Vec<String> = actual
        .difference(&allowed)
        .map(|arrow| examples[arrow].clone())
        .collect();
    let unused: Vec<String> = allowed
        .difference(&actual)
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    assert!(
        undocumented.is_empty() && unused.is_empty(),
        "docs/architecture.md does not match the code.\nin the code, not in the document:\n{}\nin the document, not in the code:\n{}",
        undocumented.join("\n"),
        unused.join("\n")
    );
}
