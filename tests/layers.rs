//! The floors of `docs/architecture.md`: every `use crate::` line of the library's sources
//! imports from the importing module's own floor or from one below it, never from above.

use std::path::{Path, PathBuf};

/// The library's top-level modules, ground floor first.
const FLOORS: [&str; 11] = [
    "vk", "shaders", "rng", "geom", "prims", "scene", "accel", "trace", "render", "sequence",
    "export",
];

/// `bench` is the top floor of the library, beside `export`.
fn floor(module: &str) -> Option<usize> {
    match module {
        "shaders" => Some(0),
        "bench" => Some(FLOORS.len() - 1),
        _ => FLOORS.iter().position(|&m| m == module),
    }
}

fn sources(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The top-level modules a `use crate::...;` statement names: `crate::a::b` names `a`, and
/// `crate::{a::x, b}` names `a` and `b`.
fn imported_modules(statement: &str) -> Vec<String> {
    let rest = statement
        .trim_start_matches("pub ")
        .trim_start_matches("use crate::");
    let rest = rest.trim_end_matches(';');
    match rest.strip_prefix('{') {
        Some(group) => {
            let mut depth = 0;
            let mut names = Vec::new();
            let mut current = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => names.push(std::mem::take(&mut current)),
                    _ if depth == 0 => current.push(c),
                    _ => {}
                }
            }
            names.push(current);
            names
                .iter()
                .map(|n| n.trim().split("::").next().unwrap_or("").to_string())
                .filter(|n| !n.is_empty())
                .collect()
        }
        None => vec![rest.split("::").next().unwrap_or("").trim().to_string()],
    }
}

#[test]
fn no_floor_imports_from_a_floor_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward = Vec::new();
    let mut checked = 0;
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        // The binary's modules (main.rs, cli/) use the library as `canopy::`.
        if top == "main" || top == "cli" || top == "lib" {
            continue;
        }
        let own = floor(&top).unwrap_or_else(|| panic!("{top}: a module without a floor"));
        let text = std::fs::read_to_string(file).unwrap();
        // Statements may span lines: join each `use crate::` up to its semicolon.
        let mut statements = Vec::new();
        let mut open: Option<String> = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(s) = open.as_mut() {
                s.push_str(line);
            } else if line.starts_with("use crate::") || line.starts_with("pub use crate::") {
                open = Some(line.to_string());
            }
            if open.as_ref().is_some_and(|s| s.ends_with(';')) {
                statements.push(open.take().unwrap());
            }
        }
        for statement in statements {
            for module in imported_modules(&statement) {
                checked += 1;
                let theirs = floor(&module)
                    .unwrap_or_else(|| panic!("{}: imports unknown {module}", file.display()));
                if theirs > own {
                    upward.push(format!(
                        "{} ({top}) -> {module}: {statement}",
                        relative.display()
                    ));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} imports read");
    assert!(
        upward.is_empty(),
        "imports from a floor above:\n{}",
        upward.join("\n")
    );
}

#[test]
fn grouped_imports_are_read() {
    assert_eq!(
        imported_modules("use crate::{geom::ray::{Hit, Ray}, vk};"),
        ["geom", "vk"]
    );
    assert_eq!(
        imported_modules("pub use crate::render::Material;"),
        ["render"]
    );
}
