//! The book (docs/src) and README.md, checked against the repository:
//!
//! - every relative link leads to a file or folder that exists;
//! - every repository path written as code (`host/…`, `tests/…`, …) exists;
//! - every `make`, `rekon` and `cargo` command in a shell block (```sh,
//!   ```console, ```bash) exists: a Makefile target, a rekon subcommand with
//!   each long flag in its `--help`, a workspace package with the named test or
//!   bench target.
//!
//! Markdown is read with pulldown-cmark, the CommonMark parser mdBook uses, so
//! what is checked is what the book renders. Commands against a cluster
//! (kubectl, docker, curl) are not run here.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One Markdown file: where it is (relative to the root) and what it holds.
struct Page {
    path: PathBuf,
    links: Vec<String>,
    /// The ids mdBook gives its headings.
    anchors: Vec<String>,
    code_spans: Vec<String>,
    /// (info string, content) of each fenced code block.
    blocks: Vec<(String, String)>,
}

impl Page {
    fn read(path: PathBuf) -> Page {
        let text = std::fs::read_to_string(root().join(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut page = Page {
            path,
            links: Vec::new(),
            anchors: Vec::new(),
            code_spans: Vec::new(),
            blocks: Vec::new(),
        };
        let mut block: Option<(String, String)> = None;
        let mut heading: Option<String> = None;
        for event in Parser::new_ext(&text, Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
                Event::End(TagEnd::Heading(_)) => {
                    page.anchors.extend(heading.take().map(|h| anchor(&h)))
                }
                Event::Text(text) | Event::Code(text) if heading.is_some() => {
                    heading.as_mut().unwrap().push_str(&text)
                }
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                    page.links.push(dest_url.into_string())
                }
                Event::Code(code) => page.code_spans.push(code.into_string()),
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                    block = Some((info.into_string(), String::new()))
                }
                Event::Text(text) => {
                    if let Some((_, content)) = &mut block {
                        content.push_str(&text);
                    }
                }
                Event::End(TagEnd::CodeBlock) => page.blocks.extend(block.take()),
                _ => {}
            }
        }
        page
    }

    fn dir(&self) -> PathBuf {
        root().join(self.path.parent().unwrap())
    }

    /// The commands it shows: inline code that starts with `make`, `cargo` or
    /// `rekon`, and the lines of its shell blocks.
    fn commands(&self) -> Vec<String> {
        let inline = self.code_spans.iter().filter(|span| {
            let first = span
                .split_whitespace()
                .find(|w| !is_assignment(w) && !PREFIXES.contains(w));
            first.is_some_and(|w| ["make", "cargo", "rekon"].contains(&w))
        });
        inline.cloned().chain(self.shell_lines()).collect()
    }

    /// Lines of its shell blocks, continuations joined, comments, heredoc
    /// bodies and console output left out.
    fn shell_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (info, content) in &self.blocks {
            let lang = info.split([',', ' ']).next().unwrap_or("");
            if !["sh", "console", "bash", "shell"].contains(&lang) {
                continue;
            }
            let mut heredoc: Option<String> = None;
            let mut pending = String::new();
            for raw in content.lines() {
                if let Some(end) = &heredoc {
                    if raw.trim() == end {
                        heredoc = None;
                    }
                    continue;
                }
                let line = if lang == "console" {
                    match raw.trim_start().strip_prefix("$ ") {
                        Some(command) => command,
                        None if pending.is_empty() => continue,
                        None => raw,
                    }
                } else {
                    raw
                };
                let line = strip_comment(line);
                if let Some(rest) = line.split("<<").nth(1) {
                    let word = rest
                        .trim_start_matches('-')
                        .trim()
                        .trim_matches(['\'', '"']);
                    heredoc = Some(word.split_whitespace().next().unwrap_or("").to_string());
                }
                match line.trim_end().strip_suffix('\\') {
                    Some(part) => pending.push_str(part),
                    None => {
                        pending.push_str(line);
                        lines.push(std::mem::take(&mut pending));
                    }
                }
            }
        }
        lines
    }
}

/// The id mdBook gives a heading: lower case, spaces as `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The line up to an unquoted `#` that starts a word.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// README.md and every page of the book.
fn pages() -> Vec<Page> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let name = entry.unwrap().file_name();
            let path = dir.join(&name);
            if root().join(&path).is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let mut paths = vec![PathBuf::from("README.md")];
    walk(Path::new("docs/src"), &mut paths);
    paths.sort();
    paths.into_iter().map(Page::read).collect()
}

/// Fails with every problem found, one per line, each naming its page.
fn report(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_relative_link_leads_to_a_file_that_exists() {
    let pages = pages();
    let mut problems = Vec::new();
    for page in &pages {
        for link in &page.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (target, fragment) = link.split_once('#').unwrap_or((link, ""));
            let file = page.dir().join(target);
            if !file.exists() {
                problems.push(format!(
                    "{}: link to {link}: no such file",
                    page.path.display()
                ));
                continue;
            }
            if fragment.is_empty() {
                continue;
            }
            let linked = if target.is_empty() {
                Some(page)
            } else {
                let file = file.canonicalize().unwrap();
                pages
                    .iter()
                    .find(|p| root().join(&p.path).canonicalize().unwrap() == file)
            };
            if let Some(linked) = linked
                && !linked.anchors.iter().any(|a| a == fragment)
            {
                problems.push(format!(
                    "{}: link to {link}: no heading #{fragment} there",
                    page.path.display()
                ));
            }
        }
    }
    report(problems);
}

/// Top-level folders and files whose paths the book names as code.
const REPO_ROOTS: &[&str] = &[
    "host/", "guests/", "tests/", "wit/", "deploy/", "docs/", ".ci/",
];

/// `span` as a path in the repository, if it reads as one: under a known
/// top-level folder, no placeholders or globs, a `:line` suffix dropped.
fn repo_path(span: &str) -> Option<&str> {
    let path = span.split(':').next()?;
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-@".contains(c));
    (plain && REPO_ROOTS.iter().any(|r| path.starts_with(r))).then_some(path)
}

#[test]
fn every_repository_path_written_as_code_exists() {
    let mut problems = Vec::new();
    for page in pages() {
        for span in &page.code_spans {
            if let Some(path) = repo_path(span)
                && !root().join(path).exists()
            {
                problems.push(format!("{}: `{span}`: no such path", page.path.display()));
            }
        }
    }
    report(problems);
}

/// The targets the Makefile defines.
fn make_targets() -> BTreeSet<String> {
    let makefile = std::fs::read_to_string(root().join("Makefile")).unwrap();
    makefile
        .lines()
        .filter(|l| !l.starts_with(['\t', '#', ' ', '.']))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (!rest.starts_with('=') && !name.contains(['=', '$', ' '])).then(|| name.to_string())
        })
        .collect()
}

/// Workspace packages and, per package, the names of its targets by kind.
struct Workspace {
    targets: HashMap<String, BTreeSet<(String, String)>>,
}

impl Workspace {
    fn load() -> Workspace {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(root())
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .output()
            .expect("run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut targets = HashMap::new();
        for package in metadata["packages"].as_array().unwrap() {
            let mut kinds = BTreeSet::new();
            for target in package["targets"].as_array().unwrap() {
                for kind in target["kind"].as_array().unwrap() {
                    let name = target["name"].as_str().unwrap().to_string();
                    kinds.insert((kind.as_str().unwrap().to_string(), name));
                }
            }
            targets.insert(package["name"].as_str().unwrap().to_string(), kinds);
        }
        Workspace { targets }
    }
}

/// `rekon <path> --help`, cached.
struct Help {
    cache: HashMap<Vec<String>, Option<String>>,
}

impl Help {
    fn of(&mut self, path: &[String]) -> Option<&str> {
        self.cache
            .entry(path.to_vec())
            .or_insert_with(|| {
                let out = Command::new(env!("CARGO_BIN_EXE_rekon"))
                    .args(path)
                    .arg("--help")
                    .output()
                    .expect("run rekon --help");
                out.status
                    .success()
                    .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            })
            .as_deref()
    }
}

/// The subcommands a `--help` text lists under `Commands:`.
fn subcommands(help: &str) -> BTreeSet<&str> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

/// The flag a word names (`--out=x` → `--out`), if it is a long flag.
fn long_flag(word: &str) -> Option<&str> {
    let word = word.trim_matches(['[', ']']);
    let flag = word.split('=').next()?;
    (flag.starts_with("--") && flag.len() > 2).then_some(flag)
}

/// What is wrong with one command, if it is one this test knows.
fn check_command(
    words: &[&str],
    targets: &BTreeSet<String>,
    workspace: &Workspace,
    help: &mut Help,
) -> Option<String> {
    let program = *words.first()?;
    let args = &words[1..];
    if program == "make" {
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if ["-C", "-f", "-o"].contains(arg) {
                args.next();
            } else if !arg.starts_with('-') && !arg.contains('=') && !targets.contains(*arg) {
                return Some(format!("`make {arg}`: no such Makefile target"));
            }
        }
    } else if program == "rekon" || program.ends_with("/rekon") {
        let mut path: Vec<String> = Vec::new();
        let root_help = help.of(&path)?.to_string();
        let mut listed = subcommands(&root_help)
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        for word in args.iter().take_while(|w| !w.starts_with('-')) {
            if !listed.iter().any(|s| s == word) {
                break;
            }
            path.push(word.to_string());
            let text = help.of(&path)?.to_string();
            listed = subcommands(&text).into_iter().map(String::from).collect();
        }
        let Some(text) = help.of(&path) else {
            return Some(format!("`rekon {}`: --help fails", path.join(" ")));
        };
        if path.is_empty() && args.first().is_some_and(|a| !a.starts_with('-')) {
            return Some(format!("`rekon {}`: no such subcommand", args[0]));
        }
        for flag in args.iter().filter_map(|w| long_flag(w)) {
            if flag != "--help" && !text.contains(flag) {
                return Some(format!("`rekon {}`: no flag {flag}", path.join(" ")));
            }
        }
    } else if program == "cargo" {
        let sub = *args.first()?;
        if !["build", "test", "bench", "run", "check", "clippy"].contains(&sub) {
            return None;
        }
        let mut package = None;
        let mut wanted = Vec::new();
        for pair in args.windows(2) {
            match pair[0] {
                "-p" | "--package" => package = Some(pair[1]),
                "--test" => wanted.push(("test", pair[1])),
                "--bench" => wanted.push(("bench", pair[1])),
                "--bin" => wanted.push(("bin", pair[1])),
                _ => {}
            }
        }
        let package = package?;
        let Some(kinds) = workspace.targets.get(package) else {
            return Some(format!(
                "`cargo {sub} -p {package}`: no such workspace package"
            ));
        };
        for (kind, name) in wanted {
            if !kinds.contains(&(kind.to_string(), name.to_string())) {
                return Some(format!(
                    "`cargo {sub} -p {package} --{kind} {name}`: no such {kind}"
                ));
            }
        }
    }
    None
}

/// Programs that run the command that follows them.
const PREFIXES: &[&str] = &["nice", "time", "env", "exec", "sudo"];

/// `NAME=value`, as a shell sets a variable for the command that follows.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

#[test]
fn every_make_rekon_and_cargo_command_shown_exists() {
    let targets = make_targets();
    let workspace = Workspace::load();
    let mut help = Help {
        cache: HashMap::new(),
    };
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for line in page.commands() {
            for command in line.split(['|', ';', '&', '(', ')']) {
                if command.contains('<') {
                    continue; // a placeholder: `-p <crate>`
                }
                let words: Vec<&str> = command
                    .split_whitespace()
                    .skip_while(|w| PREFIXES.contains(w) || is_assignment(w))
                    .collect();
                if words
                    .first()
                    .is_some_and(|p| ["make", "cargo"].contains(p) || p.ends_with("rekon"))
                {
                    checked += 1;
                }
                if let Some(problem) = check_command(&words, &targets, &workspace, &mut help) {
                    problems.push(format!(
                        "{}: {problem}\n    in: {line}",
                        page.path.display()
                    ));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} commands found: is the parser still finding the shell blocks?"
    );
    report(problems);
}

/// The first `json` block of `page` is what `rekon eval --guest GUEST ARGS`
/// prints, and the page shows that command.
/// The page's `rekon eval --guest MODULE ARGS` example, run on the module it
/// names (built by `make guests`), prints the page's json block.
fn shows_what_eval_prints(page: &Page, args: &[&str]) {
    let shown_command = args.join(" ");
    let line = page
        .shell_lines()
        .into_iter()
        .find(|l| l.starts_with("rekon eval") && l.contains(&shown_command))
        .unwrap_or_else(|| {
            panic!(
                "{}: the `rekon eval` example no longer shows {shown_command}",
                page.path.display()
            )
        });
    let guest = line
        .split_whitespace()
        .skip_while(|w| *w != "--guest")
        .nth(1)
        .and_then(|module| Path::new(module.trim_matches('"')).file_stem())
        .and_then(|stem| stem.to_str())
        .unwrap_or_else(|| panic!("{}: `{line}` names no --guest MODULE", page.path.display()))
        .to_string();
    let (_, shown) = page
        .blocks
        .iter()
        .find(|(info, _)| info == "json")
        .expect("the chapter shows the decision as a json block");
    let out = Command::new(env!("CARGO_BIN_EXE_rekon"))
        .arg("eval")
        .arg("--guest")
        .arg(rekon_runtime::testing::built_guest(&guest))
        // Paths in the repository, as the page names them.
        .args(args.iter().map(|a| match a.starts_with("docs/") {
            true => root().join(a).into_os_string(),
            false => a.into(),
        }))
        .output()
        .expect("run rekon eval");
    assert!(
        out.status.success(),
        "rekon eval: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown: serde_json::Value = serde_json::from_str(shown).unwrap();
    assert_eq!(
        printed,
        shown,
        "{}: the json shown is not what rekon eval prints",
        page.path.display()
    );
}

#[test]
fn the_rust_chapters_eval_example_prints_the_decision_it_shows() {
    shows_what_eval_prints(
        &Page::read(PathBuf::from("docs/src/guests/rust.md")),
        &[
            "--decision",
            "decide",
            "--input",
            "docs/examples/pvc-input.yaml",
        ],
    );
}

#[test]
fn the_controller_chapters_eval_example_prints_the_description_it_shows() {
    shows_what_eval_prints(
        &Page::read(PathBuf::from("docs/src/guests/controller.md")),
        &["--decision", "describe"],
    );
}

#[test]
fn the_checks_reject_what_they_should() {
    let targets = make_targets();
    let workspace = Workspace::load();
    let mut help = Help {
        cache: HashMap::new(),
    };
    let mut check = |command: &str| {
        check_command(
            &command.split_whitespace().collect::<Vec<_>>(),
            &targets,
            &workspace,
            &mut help,
        )
    };
    assert_eq!(check("make test"), None);
    assert!(check("make no-such-target").is_some());
    assert_eq!(check("rekon run --embedded --guests DIR --demo"), None);
    assert!(check("rekon run --no-such-flag").is_some());
    assert!(check("rekon no-such-subcommand --x").is_some());
    assert_eq!(
        check("cargo test -p rekon-tests --test campaign -- --nocapture"),
        None
    );
    assert!(check("cargo test -p rekon-tests --test no_such_test").is_some());
    assert!(check("cargo bench -p no-such-crate --bench x").is_some());
    assert_eq!(
        repo_path("host/cli/src/main.rs:12"),
        Some("host/cli/src/main.rs")
    );
    assert_eq!(repo_path("guests/<world>/cases"), None);
    assert_eq!(
        anchor("Simulate: what would the controllers do?"),
        "simulate-what-would-the-controllers-do"
    );
    assert_eq!(
        anchor("A key's walk, from watch event to write"),
        "a-keys-walk-from-watch-event-to-write"
    );
    assert_eq!(strip_comment("make demo   # builds it"), "make demo   ");
    assert_eq!(strip_comment("echo '# kept'"), "echo '# kept'");
}
