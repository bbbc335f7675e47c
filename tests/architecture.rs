//! The architecture, held by a test. docs/architecture.md ("The rules a test holds")
//! writes down which crate may depend on which, what never depends on what (with why),
//! and the layers of the core; these tests read those tables and check them against
//! `cargo metadata` and against every file of `core/src/`, so the design and the code cannot
//! drift apart without CI saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The rows of the markdown table under `heading` in docs/architecture.md, cells trimmed
/// and stripped of backticks.
fn table(heading: &str) -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc
        .lines()
        .position(|l| l.trim_start_matches('#').trim() == heading)
        .unwrap_or_else(|| panic!("docs/architecture.md has no heading {heading:?}"));
    let rows: Vec<Vec<String>> = doc
        .lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.replace('`', "").trim().to_string())
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "the table under {heading:?} is empty");
    rows
}

fn list(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && *c != "—")
        .map(String::from)
        .collect()
}

/// Each workspace crate and the workspace crates it depends on (normal and build), from
/// `cargo metadata`.
fn crate_graph() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|name| ours.contains(name))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_what_the_design_allows() {
    let graph = crate_graph();
    let allowed: BTreeMap<String, BTreeSet<String>> = table("Which crate may depend on which")
        .into_iter()
        .map(|row| (row[0].clone(), list(&row[1])))
        .collect();
    let listed: BTreeSet<&String> = allowed.keys().collect();
    let built: BTreeSet<&String> = graph.keys().collect();
    assert_eq!(
        listed, built,
        "docs/architecture.md must list every workspace crate, and only those"
    );
    let mut wrong = Vec::new();
    for (name, deps) in &graph {
        for dep in deps.difference(&allowed[name]) {
            wrong.push(format!("{name} depends on {dep}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "not allowed by docs/architecture.md: {wrong:?}"
    );
}

#[test]
fn nothing_depends_on_what_the_design_says_it_never_may() {
    let graph = crate_graph();
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut next = vec![from.to_string()];
        while let Some(at) = next.pop() {
            for dep in graph.get(&at).into_iter().flatten() {
                if seen.insert(dep.clone()) {
                    next.push(dep.clone());
                }
            }
        }
        seen
    };
    for row in table("What never depends on what") {
        let (from, to, why) = (&row[0], &row[1], &row[2]);
        assert!(
            graph.contains_key(from) && graph.contains_key(to),
            "{row:?}"
        );
        assert!(!why.is_empty(), "{from} → {to} needs its reason");
        assert!(
            !reach(from).contains(to),
            "{from} reaches {to}, which it never may: {why}"
        );
    }
}

/// One file of the core: its module path (`["agent", "turn"]`) and its text with
/// comments and trailing test modules cut away.
struct File {
    module: Vec<String>,
    text: String,
    children: BTreeSet<String>,
    /// The names of the items defined in it.
    defines: BTreeSet<String>,
    /// Its `use` trees: (path, is it a re-export).
    uses: Vec<(String, bool)>,
}

fn core_files() -> BTreeMap<Vec<String>, File> {
    let src = root().join("core/src");
    let mut files = BTreeMap::new();
    let comment = Regex::new(r"(?m)//.*$").unwrap();
    let tests = Regex::new(r"#\[cfg\(test\)\]\s*mod \w+ \{").unwrap();
    let child = Regex::new(r"(?m)^\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let item = Regex::new(
        r"\b(?:fn|struct|enum|trait|const|static|type|union|mod)\s+(\w+)|macro_rules!\s*(\w+)",
    )
    .unwrap();
    let uses = Regex::new(r"(?m)^\s*(pub(?:\([\w:]+\))?\s+)?use\s+([^;]+);").unwrap();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path == src.join("main.rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let raw = std::fs::read_to_string(&path).unwrap();
            let mut text = comment.replace_all(&raw, "").into_owned();
            if let Some(m) = tests.find(&text) {
                text.truncate(m.start());
            }
            let children = child
                .captures_iter(&text)
                .map(|c| c[1].to_string())
                .collect();
            let defines = item
                .captures_iter(&text)
                .filter_map(|c| c.get(1).or(c.get(2)))
                .map(|m| m.as_str().to_string())
                .collect();
            let uses = uses
                .captures_iter(&text)
                .flat_map(|c| {
                    let public = c.get(1).is_some();
                    let tree: String = c[2].split_whitespace().collect::<Vec<_>>().join(" ");
                    let tree = tree.replace(" as ", "@").replace(' ', "");
                    expand(&tree).into_iter().map(move |p| (p, public))
                })
                .collect();
            files.insert(
                module.clone(),
                File {
                    module,
                    text,
                    children,
                    defines,
                    uses,
                },
            );
        }
    }
    files
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (whitespace already removed).
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|i| !i.is_empty())
        .flat_map(|i| expand(i).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// The imports of the core's files, each resolved to the file that defines what it names.
struct Imports {
    files: BTreeMap<Vec<String>, File>,
}

impl Imports {
    fn new() -> Imports {
        Imports {
            files: core_files(),
        }
    }

    /// A path written in `file`, made absolute; `None` when it leaves the core.
    fn absolute(&self, file: &File, path: &str) -> Option<Vec<String>> {
        let path = path.split('@').next().unwrap_or(path);
        let segs: Vec<&str> = path
            .split("::")
            .filter(|s| !s.is_empty() && *s != "*")
            .collect();
        let first = *segs.first()?;
        let mut base = file.module.clone();
        let rest = match first {
            "crate" => {
                base.clear();
                &segs[1..]
            }
            "super" | "self" => {
                let mut i = 0;
                while i < segs.len() && matches!(segs[i], "super" | "self") {
                    if segs[i] == "super" {
                        base.pop();
                    }
                    i += 1;
                }
                &segs[i..]
            }
            child if file.children.contains(child) => &segs[..],
            _ => return None,
        };
        base.extend(rest.iter().filter(|s| **s != "self").map(|s| s.to_string()));
        Some(base)
    }

    /// The file that defines what `path` names: the longest module prefix that is a file,
    /// then the item in it, following re-exports.
    fn definer(&self, path: &[String], depth: usize) -> Option<Vec<String>> {
        let at = (1..=path.len())
            .rev()
            .find(|i| self.files.contains_key(&path[..*i]))?;
        let module = path[..at].to_vec();
        match path.get(at) {
            Some(item) if depth < 8 => Some(self.find(&module, item, depth).unwrap_or(module)),
            _ => Some(module),
        }
    }

    fn find(&self, module: &[String], item: &str, depth: usize) -> Option<Vec<String>> {
        let file = &self.files[module];
        if file.defines.contains(item) {
            return Some(module.to_vec());
        }
        for (path, _) in &file.uses {
            let (target, name) = match path.split_once('@') {
                Some((target, alias)) => (target.to_string(), alias.to_string()),
                None => (path.clone(), path.rsplit("::").next()?.to_string()),
            };
            if name == item {
                let absolute = self.absolute(file, &target)?;
                return self.definer(&absolute, depth + 1);
            }
            if let Some(glob) = path.strip_suffix("::*")
                && let Some(mut absolute) = self.absolute(file, glob)
            {
                absolute.push(item.to_string());
                if let Some(found) = self.definer(&absolute, depth + 1)
                    && found != module
                {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Each file and the files it imports (not itself, not the crate root).
    fn graph(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let use_line = Regex::new(r"(?m)^\s*(pub(?:\([\w:]+\))?\s+)?use\s+[^;]+;").unwrap();
        let inline = Regex::new(r"(?:^|[^\w:])((?:crate|super)(?:::\w+)+)").unwrap();
        let mut graph = BTreeMap::new();
        for (module, file) in &self.files {
            let mut paths: Vec<String> = file
                .uses
                .iter()
                .filter(|(_, public)| !public) // a re-export is not a need
                .map(|(p, _)| p.clone())
                .collect();
            let body = use_line.replace_all(&file.text, "");
            paths.extend(inline.captures_iter(&body).map(|c| c[1].to_string()));
            let targets = paths
                .iter()
                .filter_map(|p| self.absolute(file, p))
                .filter_map(|a| self.definer(&a, 0))
                .filter(|t| t != module && !t.is_empty())
                .collect();
            graph.insert(module.clone(), targets);
        }
        graph
    }
}

/// The strongly connected groups of `graph` (Tarjan's algorithm).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for w in &self.graph[v] {
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_import_circle_among_the_cores_files_is_longer_than_four() {
    let graph = Imports::new().graph();
    let long: Vec<String> = circles(&graph)
        .into_iter()
        .filter(|c| c.len() > 4)
        .map(|c| {
            let names: BTreeSet<String> = c.iter().map(|m| m.join("::")).collect();
            format!("{} files: {names:?}", c.len())
        })
        .collect();
    assert!(long.is_empty(), "import circles over four files: {long:#?}");
}

#[test]
fn no_module_of_the_core_imports_from_a_layer_below_it() {
    let layers = table("The layers of the core");
    let layer_of: BTreeMap<String, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, row)| list(&row[1]).into_iter().map(move |m| (m, i)))
        .collect();
    let imports = Imports::new();
    let top: BTreeSet<&String> = imports
        .files
        .keys()
        .filter_map(|m| m.first())
        .filter(|m| !matches!(m.as_str(), "lib" | "main"))
        .collect();
    let named: BTreeSet<&String> = layer_of.keys().collect();
    assert_eq!(
        top, named,
        "docs/architecture.md's layers must name every module of core/src/, and only those"
    );
    let mut upward = Vec::new();
    for (from, targets) in imports.graph() {
        let Some(from_layer) = from.first().and_then(|m| layer_of.get(m)) else {
            continue;
        };
        for to in targets {
            let to_layer = layer_of[&to[0]];
            if to_layer > *from_layer {
                upward.push(format!(
                    "{} ({}) imports {} ({})",
                    from.join("::"),
                    layers[*from_layer][0],
                    to.join("::"),
                    layers[to_layer][0]
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
}

#[test]
fn the_import_reader_sees_what_it_must() {
    // The checks above are only as good as the reader: it must see a plain use, a
    // grouped use, an inline path and a re-export followed to its definer.
    let graph = Imports::new().graph();
    let of = |m: &str| &graph[&m.split("::").map(String::from).collect::<Vec<_>>()];
    let has = |from: &str, to: &str| {
        of(from).contains(&to.split("::").map(String::from).collect::<Vec<_>>())
    };
    assert!(has("retention", "clock"), "{:?}", of("retention"));
    assert!(
        has("cron::jobs", "access::origin"),
        "{:?}",
        of("cron::jobs")
    );
    assert!(
        has("agent::turn", "tools::skills"),
        "{:?}",
        of("agent::turn")
    );
}
