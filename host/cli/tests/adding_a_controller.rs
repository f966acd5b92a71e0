//! The book's "Adding a controller" chapter (docs/src/internals/adding-a-controller.md)
//! against the repository: its lists of the files that name the third controller,
//! ephemeral-volume, are compared with what `git grep` finds, so the chapter
//! cannot drift from the tree; and the files a dedicated controller needs outside
//! its own are counted, the deploy test and the ConfigMap among them. The lists
//! are read from the chapter (between `<!-- files:KIND -->` and
//! `<!-- files:end -->`), never written here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const CHAPTER: &str = "docs/src/internals/adding-a-controller.md";
/// What "names the controller" means: ephemeral-volume, ephemeral_volume, EphemeralVolume.
const PATTERN: &str = "ephemeral[-_]?volume";
/// Today's count of the files outside a dedicated controller's own that it
/// needs: more is a design change, to be made here on purpose.
const MAX_NEEDED_OUTSIDE: usize = 11;
/// Files a dedicated controller needs that are easy to forget: its RBAC in the
/// deploy test, its module in the deploy ConfigMap.
const ALWAYS_NEEDED: &[&str] = &["tests/deploy.rs", "deploy/guests-configmap.yaml"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One listed file or folder (a folder ends with `/`) and, in a table, its kind.
struct Entry {
    path: String,
    kind: Option<String>,
}

impl Entry {
    fn covers(&self, file: &str) -> bool {
        match self.path.strip_suffix('/') {
            Some(folder) => file.starts_with(&format!("{folder}/")),
            None => file == self.path,
        }
    }
}

/// The entries of the chapter's `<!-- files:{list} -->` block: the first code
/// span of each line, and the last table cell as its kind.
fn listed(chapter: &str, list: &str) -> Vec<Entry> {
    let start = format!("<!-- files:{list} -->");
    let block = chapter
        .split_once(&start)
        .unwrap_or_else(|| panic!("{CHAPTER}: no {start} block"))
        .1
        .split_once("<!-- files:end -->")
        .unwrap_or_else(|| panic!("{CHAPTER}: the {start} block has no <!-- files:end -->"))
        .0;
    block
        .lines()
        .filter_map(|line| {
            let path = line.split('`').nth(1)?.to_string();
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
            let kind = (cells.len() > 1).then(|| cells.last().unwrap().trim().to_string());
            Some(Entry { path, kind })
        })
        .collect()
}

/// Every tracked file that names the controller.
fn naming_files() -> BTreeSet<String> {
    let out = Command::new("git")
        .current_dir(root())
        .args(["grep", "-l", "-i", "-E", PATTERN])
        .output()
        .expect("run git grep (the test needs a git checkout)");
    assert!(
        out.status.success(),
        "git grep: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_chapter_lists_every_file_that_names_the_third_controller() {
    let chapter = std::fs::read_to_string(root().join(CHAPTER)).unwrap();
    let own = listed(&chapter, "own");
    let outside = listed(&chapter, "outside");
    let unnamed = listed(&chapter, "unnamed");
    let found = naming_files();
    let mut problems = Vec::new();
    for entry in own.iter().chain(&outside).chain(&unnamed) {
        if !root().join(&entry.path).exists() {
            problems.push(format!("listed `{}` does not exist", entry.path));
        }
    }
    for file in &found {
        if !own.iter().chain(&outside).any(|e| e.covers(file)) {
            problems.push(format!("`{file}` names the controller but is not listed"));
        }
    }
    for entry in &outside {
        if !found.iter().any(|file| entry.covers(file)) {
            problems.push(format!(
                "`{}` is listed outside but names the controller nowhere",
                entry.path
            ));
        }
    }
    for entry in &unnamed {
        if found.iter().any(|file| entry.covers(file)) {
            problems.push(format!(
                "`{}` is listed as not naming the controller, but does: move it to the table",
                entry.path
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{CHAPTER} differs from `git grep -l -i -E '{PATTERN}'`:\n{}",
        problems.join("\n")
    );
}

/// The three numbers of the chapter's sentence "So a dedicated controller needs
/// N files outside its own: the M `needed` rows and these K".
fn stated_counts(chapter: &str) -> [usize; 3] {
    let text = chapter.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = text
        .split_once("So a dedicated controller needs ")
        .unwrap_or_else(|| {
            panic!("{CHAPTER}: no \"So a dedicated controller needs N files\" sentence")
        })
        .1;
    let mut numbers = sentence
        .split([' ', '.', ':'])
        .take(16)
        .filter_map(|word| word.parse::<usize>().ok());
    [(); 3].map(|_| {
        numbers
            .next()
            .unwrap_or_else(|| panic!("{CHAPTER}: the count sentence needs three numbers"))
    })
}

#[test]
fn the_chapter_counts_every_file_a_dedicated_controller_needs() {
    let chapter = std::fs::read_to_string(root().join(CHAPTER)).unwrap();
    let rows: Vec<String> = listed(&chapter, "outside")
        .into_iter()
        .filter(|e| e.kind.as_deref() == Some("needed"))
        .map(|e| e.path)
        .collect();
    let unnamed: Vec<String> = listed(&chapter, "unnamed")
        .into_iter()
        .map(|e| e.path)
        .collect();
    let needed: Vec<&String> = rows.iter().chain(&unnamed).collect();
    for file in ALWAYS_NEEDED {
        assert!(
            needed.iter().any(|n| n == file),
            "{CHAPTER}: `{file}` is not counted among the files a controller needs"
        );
    }
    assert_eq!(
        stated_counts(&chapter),
        [needed.len(), rows.len(), unnamed.len()],
        "{CHAPTER}: the count sentence differs from the lists: {needed:?}"
    );
    assert!(
        needed.len() <= MAX_NEEDED_OUTSIDE,
        "{} files outside the controller's own need a change (at most {MAX_NEEDED_OUTSIDE}): {needed:?}",
        needed.len()
    );
}
