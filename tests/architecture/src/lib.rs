//! The workspace's import graph, read from its own sources.
//!
//! Every `use` and every `crate::` / `super::` path of a crate's sources (test modules left
//! out) is resolved to the file that defines it, through `pub use` re-exports. The tests of
//! this crate hold the graph to the rules of `docs/architecture.md`:
//! - in every crate of the workspace, no folder's sibling modules (files or folders) import
//!   one another in a circle, and no file of the host's parts does (`tests/workspace.rs`);
//! - between the host's parts, the arrows are exactly the ones the document lists (its
//!   `arrows` block), and none of the ones it forbids (its `never` block) (`tests/host.rs`);
//! - no crate of `assignors-common/` depends on a strategy crate of `assignors/`.
//!
//! Run them with `cargo test -p assignor-architecture` (a few seconds: this crate builds only
//! `syn`).

pub mod workspace;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use syn::visit::Visit;

/// A module path below the crate root (`["coordinator", "classic", "group"]`); the root is `[]`.
pub type ModPath = Vec<String>;

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

/// The file a `#[path = "..."]` attribute names.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Every module of the crate reachable from its root file (`lib.rs`, `main.rs`) through
/// `mod x;`, test modules left out.
fn modules(root: &Path) -> BTreeMap<ModPath, Module> {
    let mut found = BTreeMap::new();
    let mut queue = vec![(Vec::new(), root.to_path_buf())];
    while let Some((path, file)) = queue.pop() {
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = file.parent().unwrap().to_path_buf();
        // Children of a root and of mod.rs sit beside them; children of a.rs under a/.
        let children_dir = if path.is_empty() || name == "mod.rs" {
            dir.clone()
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
                // `#[path = "x.rs"]` is relative to the folder of the file that says it.
                let child_file = match path_attribute(&m.attrs) {
                    Some(given) => dir.join(given),
                    None if flat.exists() => flat,
                    None => nested,
                };
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

/// One crate's modules and the references between them.
pub struct Graph {
    modules: BTreeMap<ModPath, Module>,
    /// Per module: name -> absolute path it re-exports.
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    references: BTreeMap<ModPath, Vec<Reference>>,
}

impl Graph {
    /// The crate whose root file is `root` (`src/lib.rs`).
    pub fn read(root: &Path) -> Graph {
        let modules = modules(root);
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

    /// Every module of the crate.
    pub fn modules(&self) -> impl Iterator<Item = &ModPath> {
        self.modules.keys()
    }

    /// File-level edges `from -> to`. A re-export of a module's own descendants is its
    /// facade, not a dependency, and is left out.
    pub fn edges(&self) -> BTreeSet<(ModPath, ModPath)> {
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

/// `a::b::c`, or `crate` for the root.
pub fn name(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// A circle among the files of `part` (a top-level module), if there is one.
pub fn find_cycle(part: &str, edges: &BTreeSet<(ModPath, ModPath)>) -> Option<Vec<ModPath>> {
    let inside: BTreeSet<(ModPath, ModPath)> = edges
        .iter()
        .filter(|(a, b)| a.first().map(String::as_str) == Some(part) && a.first() == b.first())
        .cloned()
        .collect();
    cycle(&inside)
}

/// The circles among the children of each folder module: a reference from anything inside
/// child `a` to anything inside its sibling `b` is an arrow `a -> b` (a reference to or from
/// the folder's own file is not one: it is the parent, not a sibling). One line per group of
/// siblings that reach one another, `folder: {a, b, c}`.
pub fn sibling_circles(graph: &Graph) -> Vec<String> {
    let edges = graph.edges();
    let mut circles = Vec::new();
    for folder in graph.modules() {
        let depth = folder.len();
        // Each arrow between siblings, with the first file-level reference that makes it.
        let mut siblings: BTreeMap<(String, String), String> = BTreeMap::new();
        for (a, b) in &edges {
            if a.len() > depth
                && b.len() > depth
                && a.starts_with(folder)
                && b.starts_with(folder)
                && a[depth] != b[depth]
            {
                let arrow = (a[depth].clone(), b[depth].clone());
                siblings
                    .entry(arrow)
                    .or_insert_with(|| format!("{} -> {}", name(a), name(b)));
            }
        }
        let arrows: BTreeSet<(String, String)> = siblings.keys().cloned().collect();
        for group in circle_groups(&arrows) {
            let members: Vec<&str> = group.iter().map(String::as_str).collect();
            let because: Vec<&str> = siblings
                .iter()
                .filter(|((a, b), _)| group.contains(a) && group.contains(b))
                .map(|(_, example)| example.as_str())
                .collect();
            circles.push(format!(
                "{}: {{{}}}, by {}",
                name(folder),
                members.join(", "),
                because.join("; ")
            ));
        }
    }
    circles
}

/// The groups of two or more nodes of `edges` that all reach one another (the strongly
/// connected components), each sorted.
pub fn circle_groups<N: Ord + Clone>(edges: &BTreeSet<(N, N)>) -> Vec<BTreeSet<N>> {
    let mut next: BTreeMap<&N, Vec<&N>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    let reach = |from: &N| -> BTreeSet<N> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            for &child in next.get(node).into_iter().flatten() {
                if seen.insert(child.clone()) {
                    stack.push(child);
                }
            }
        }
        seen
    };
    let nodes: BTreeSet<&N> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reaches: BTreeMap<&N, BTreeSet<N>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut groups: Vec<BTreeSet<N>> = Vec::new();
    for node in &nodes {
        if groups.iter().any(|g| g.contains(*node)) || !reaches[node].contains(*node) {
            continue;
        }
        let group: BTreeSet<N> = reaches[node]
            .iter()
            .filter(|other| reaches[other].contains(*node))
            .cloned()
            .collect();
        groups.push(group);
    }
    groups
}

/// A circle in the directed graph `edges`, as its nodes with the first repeated at the end.
pub fn cycle<N: Ord + Clone>(edges: &BTreeSet<(N, N)>) -> Option<Vec<N>> {
    let mut next: BTreeMap<&N, Vec<&N>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    // Depth-first search with colours: 1 = on the stack, 2 = done.
    fn visit<'a, N: Ord + Clone>(
        node: &'a N,
        next: &BTreeMap<&'a N, Vec<&'a N>>,
        colour: &mut BTreeMap<&'a N, u8>,
        stack: &mut Vec<&'a N>,
    ) -> Option<Vec<N>> {
        colour.insert(node, 1);
        stack.push(node);
        for &child in next.get(node).into_iter().flatten() {
            match colour.get(child).copied() {
                Some(1) => {
                    let start = stack.iter().position(|n| *n == child).unwrap();
                    let mut found: Vec<N> = stack[start..].iter().map(|n| (*n).clone()).collect();
                    found.push(child.clone());
                    return Some(found);
                }
                Some(_) => {}
                None => {
                    if let Some(found) = visit(child, next, colour, stack) {
                        return Some(found);
                    }
                }
            }
        }
        stack.pop();
        colour.insert(node, 2);
        None
    }
    let mut colour = BTreeMap::new();
    for (a, _) in edges {
        if !colour.contains_key(a)
            && let Some(found) = visit(a, &next, &mut colour, &mut Vec::new())
        {
            return Some(found);
        }
    }
    None
}

/// The `part -> a, b, c` lines of the fenced block of `kind` in the document.
pub fn arrows(doc: &str, kind: &str) -> BTreeSet<(String, String)> {
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
