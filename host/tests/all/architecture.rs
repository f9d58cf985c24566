//! The host's import graph, read from its own sources, against `docs/architecture.md`.
//!
//! Every `use` and every `crate::` / `super::` path of `host/src` (test modules left out) is
//! resolved to the file that defines it, through `pub use` re-exports. Two rules follow:
//! - inside each part (a top-level module such as `coordinator`), the files import one
//!   another without a circle;
//! - between parts, the arrows are exactly the ones the document lists (its `arrows` block),
//!   and none of the ones it forbids (its `never` block).
//!
//! Run it alone with `cargo test -p assignor-host --test all architecture`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module path below the crate root (`["coordinator", "classic", "group"]`); the root is `[]`.
type ModPath = Vec<String>;

struct Module {
    ast: syn::File,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Every module of the crate reachable from `lib.rs` through `mod x;`, test modules left out.
fn modules(src: &Path) -> BTreeMap<ModPath, Module> {
    let mut found = BTreeMap::new();
    let mut queue = vec![(Vec::new(), src.join("lib.rs"))];
    while let Some((path, file)) = queue.pop() {
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = file.parent().unwrap().to_path_buf();
        // Children of lib.rs and mod.rs sit beside them; children of a.rs under a/.
        let children_dir = if name == "lib.rs" || name == "mod.rs" {
            dir
        } else {
            dir.join(name.trim_end_matches(".rs"))
        };
        for item in &ast.items {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
                && !is_cfg_test(&m.attrs)
            {
                let child = m.ident.to_string();
                let flat = children_dir.join(format!("{child}.rs"));
                let nested = children_dir.join(&child).join("mod.rs");
                let child_file = if flat.exists() { flat } else { nested };
                let mut child_path = path.clone();
                child_path.push(child);
                queue.push((child_path, child_file));
            }
        }
        found.insert(path, Module { ast });
    }
    found
}

/// One path a module names: the path as written, from that module, and whether it is a
/// `pub use` (a re-export).
struct Reference {
    segments: Vec<String>,
    reexport: bool,
}

#[derive(Default)]
struct Collector {
    references: Vec<Reference>,
}

impl Collector {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, reexport: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, reexport);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut segments = prefix.clone();
                if n.ident != "self" {
                    segments.push(n.ident.to_string());
                }
                self.references.push(Reference { segments, reexport });
            }
            syn::UseTree::Rename(r) => {
                let mut segments = prefix.clone();
                segments.push(r.ident.to_string());
                self.references.push(Reference { segments, reexport });
            }
            syn::UseTree::Glob(_) => self.references.push(Reference {
                segments: prefix.clone(),
                reexport,
            }),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree, reexport);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => &Vec::new(),
        };
        if is_cfg_test(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
        self.use_tree(&mut Vec::new(), &u.tree, reexport);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // `a::b` may name a child module `a` (uniform paths) as well as another crate; which
        // one is decided when the path is resolved, against the modules that exist.
        if path.segments.len() > 1 && path.leading_colon.is_none() {
            self.references.push(Reference {
                segments: path.segments.iter().map(|s| s.ident.to_string()).collect(),
                reexport: false,
            });
        }
        syn::visit::visit_path(self, path);
    }
}

/// `segments` as written in module `from`, made absolute; `None` for other crates' paths.
/// A path that starts with the name of one of `from`'s child modules is relative to `from`.
fn absolute(
    modules: &BTreeMap<ModPath, Module>,
    from: &ModPath,
    segments: &[String],
) -> Option<Vec<String>> {
    let mut out = from.clone();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = from.clone();
            child.push(first.to_owned());
            if !modules.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

struct Graph {
    modules: BTreeMap<ModPath, Module>,
    /// Per module: name -> absolute path it re-exports.
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    references: BTreeMap<ModPath, Vec<Reference>>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let modules = modules(src);
        let mut reexports = BTreeMap::new();
        let mut references = BTreeMap::new();
        for (path, module) in &modules {
            let mut collector = Collector::default();
            collector.visit_file(&module.ast);
            let mut table = BTreeMap::new();
            for r in &collector.references {
                if r.reexport
                    && let (Some(name), Some(abs)) =
                        (r.segments.last(), absolute(&modules, path, &r.segments))
                {
                    table.insert(name.clone(), abs);
                }
            }
            reexports.insert(path.clone(), table);
            references.insert(path.clone(), collector.references);
        }
        Graph {
            modules,
            reexports,
            references,
        }
    }

    /// The module that defines what `abs` names: its longest module prefix, followed through
    /// that module's re-exports.
    fn resolve(&self, abs: &[String], depth: usize) -> ModPath {
        let mut module: ModPath = abs.to_vec();
        while !self.modules.contains_key(&module) {
            module.pop();
        }
        if depth < 8
            && let Some(name) = abs.get(module.len())
            && let Some(target) = self.reexports.get(&module).and_then(|t| t.get(name))
        {
            return self.resolve(target, depth + 1);
        }
        module
    }

    /// File-level edges `from -> to`. A re-export of a module's own descendants is its
    /// facade, not a dependency, and is left out.
    fn edges(&self) -> BTreeSet<(ModPath, ModPath)> {
        let mut edges = BTreeSet::new();
        for (from, refs) in &self.references {
            for r in refs {
                let Some(abs) = absolute(&self.modules, from, &r.segments) else {
                    continue;
                };
                let to = self.resolve(&abs, 0);
                if to == *from || to.is_empty() {
                    continue;
                }
                if r.reexport && to.starts_with(from) {
                    continue;
                }
                edges.insert((from.clone(), to));
            }
        }
        edges
    }
}

fn name(path: &ModPath) -> String {
    path.join("::")
}

/// A circle among the files of `part`, if there is one.
fn find_cycle(part: &str, edges: &BTreeSet<(ModPath, ModPath)>) -> Option<Vec<ModPath>> {
    let inside: Vec<&(ModPath, ModPath)> = edges
        .iter()
        .filter(|(a, b)| a.first().map(String::as_str) == Some(part) && a.first() == b.first())
        .collect();
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (a, b) in &inside {
        next.entry(a).or_default().push(b);
    }
    // Depth-first search with colours: 1 = on the stack, 2 = done.
    fn visit<'a>(
        node: &'a ModPath,
        next: &BTreeMap<&'a ModPath, Vec<&'a ModPath>>,
        colour: &mut BTreeMap<&'a ModPath, u8>,
        stack: &mut Vec<&'a ModPath>,
    ) -> Option<Vec<ModPath>> {
        colour.insert(node, 1);
        stack.push(node);
        for &child in next.get(node).into_iter().flatten() {
            match colour.get(child).copied() {
                Some(1) => {
                    let start = stack.iter().position(|n| *n == child).unwrap();
                    let mut cycle: Vec<ModPath> =
                        stack[start..].iter().map(|n| (*n).clone()).collect();
                    cycle.push(child.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(child, next, colour, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        colour.insert(node, 2);
        None
    }
    let mut colour = BTreeMap::new();
    for (a, _) in &inside {
        if !colour.contains_key(a)
            && let Some(cycle) = visit(a, &next, &mut colour, &mut Vec::new())
        {
            return Some(cycle);
        }
    }
    None
}

/// The `part -> a, b, c` lines of the fenced block of `kind` in the document.
fn arrows(doc: &str, kind: &str) -> BTreeSet<(String, String)> {
    let fence = format!("```{kind}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/architecture.md has no ```{kind} block"))
        + fence.len();
    let end = start + doc[start..].find("```").expect("closed block");
    let mut out = BTreeSet::new();
    for line in doc[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        let (from, to) = line
            .split_once("->")
            .unwrap_or_else(|| panic!("not `part -> parts`: {line}"));
        for target in to.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            out.insert((from.trim().to_owned(), target.to_owned()));
        }
    }
    out
}

fn host_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn document() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_part_of_the_host_imports_in_a_circle() {
    let graph = Graph::read(&host_src());
    let edges = graph.edges();
    let parts: BTreeSet<String> = graph
        .modules
        .keys()
        .filter_map(|p| p.first().cloned())
        .collect();
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
    let graph = Graph::read(&host_src());
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
    let graph = Graph::read(&host_src());
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
