//! Every crate of the workspace: no folder whose sibling modules import one another in a
//! circle, and nothing in `assignors-common/` (what the strategies share) depending on a
//! strategy of `assignors/`.

use assignor_architecture::workspace::crates;
use assignor_architecture::{Graph, sibling_circles};

#[test]
fn no_folder_of_any_crate_has_sibling_modules_in_a_circle() {
    let crates = crates();
    let names: Vec<&str> = crates.iter().map(|c| c.dir.as_str()).collect();
    for expected in [
        "host",
        "guest-sdk",
        "wire",
        "assignors/range",
        "assignors-common/inner",
    ] {
        assert!(names.contains(&expected), "{expected} not read: {names:?}");
    }
    let circles: Vec<String> = crates
        .iter()
        .flat_map(|c| {
            sibling_circles(&Graph::read(&c.root_file))
                .into_iter()
                .map(move |circle| format!("{}: {circle}", c.dir))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "sibling modules importing one another in a circle (crate: folder: modules):\n{}",
        circles.join("\n")
    );
}

#[test]
fn what_the_strategies_share_depends_on_no_strategy() {
    let crates = crates();
    let upward: Vec<String> = crates
        .iter()
        .filter(|c| c.dir.starts_with("assignors-common/"))
        .flat_map(|c| {
            c.path_dependencies()
                .into_iter()
                .filter(|d| d.starts_with("assignors/"))
                .map(move |d| format!("{} -> {d}", c.dir))
        })
        .collect();
    assert!(
        upward.is_empty(),
        "assignors-common/ depends on strategies of assignors/:\n{}",
        upward.join("\n")
    );
}
