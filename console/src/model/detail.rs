//! What a request is about, ready to show before any tap: the agent's own
//! explanation, a command in whole lines, and each file's change as a
//! diff (AEP `data.context`, [`RequestContext`]). Long text folds to its
//! first lines behind a "show all" that says how much is hidden: nothing
//! is ever cut without saying so. Every text here is agent-authored.

use aep_engine::protocol::request_context::{FileChange, RequestContext};

/// When text folds: past `above` lines, `keep` are shown until asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub above: usize,
    pub keep: usize,
}

/// A command reads whole up to 8 lines; a longer one shows 6 first.
pub const COMMAND_FOLD: Fold = Fold { above: 8, keep: 6 };
/// A change reads whole up to 30 diff lines; a larger one shows 20 first.
pub const DIFF_FOLD: Fold = Fold { above: 30, keep: 20 };
/// Past this many cells the line diff is not searched for common lines:
/// the old text is shown removed and the new added.
const DIFF_CELLS: usize = 250_000;

impl Fold {
    /// How many of `total` lines show while folded, or `None` when all do.
    pub fn shown(self, total: usize) -> Option<usize> {
        (total > self.above).then_some(self.keep)
    }
}

/// The request's details, as the card shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// Why, in the agent's words.
    pub description: Option<String>,
    /// The shell command, line by line.
    pub command: Option<Vec<String>>,
    pub changes: Vec<ChangeView>,
}

impl Detail {
    /// The details of `context`, its paths said relative to the session's
    /// working directory `cwd` when they are under it.
    pub fn of(context: &RequestContext, cwd: Option<&str>) -> Detail {
        let change = |c: &FileChange| ChangeView { shown_path: in_project(&c.path, cwd), ..ChangeView::of(c) };
        Detail {
            description: context.description.clone().filter(|d| !d.trim().is_empty()),
            command: context.command.as_deref().filter(|c| !c.trim().is_empty()).map(lines),
            changes: context.changes.iter().map(change).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.description.is_none() && self.command.is_none() && self.changes.is_empty()
    }
}

/// `path` as a person knows it in the project at `cwd`: relative to it
/// when under it, else whole.
pub fn in_project(path: &str, cwd: Option<&str>) -> String {
    cwd.map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
        .and_then(|c| path.strip_prefix(c)?.strip_prefix('/'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(path)
        .to_owned()
}

/// `text` in lines, a `\r\n` read as one break; an ending break adds no
/// line.
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

/// One piece of a line: a run of spaces, or a token (a run of anything
/// else), which is never broken across lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Space(&'a str),
    Token(&'a str),
}

/// `line` as tokens and the spaces between them, in order.
pub fn pieces(line: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in line.char_indices() {
        let space = c == ' ' || c == '\t';
        if in_space.is_some_and(|s| s != space) {
            out.push(piece(&line[start..i], !space));
            start = i;
        }
        in_space = Some(space);
    }
    if let Some(space) = in_space {
        out.push(piece(&line[start..], space));
    }
    out
}

fn piece(text: &str, space: bool) -> Piece<'_> {
    if space {
        Piece::Space(text)
    } else {
        Piece::Token(text)
    }
}

/// What a diff line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Unchanged, shown for context.
    Same,
    Removed,
    Added,
    /// A hunk's header (`@@ …`): where the next lines are.
    Hunk,
}

impl Mark {
    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            Mark::Same => "same",
            Mark::Removed => "removed",
            Mark::Added => "added",
            Mark::Hunk => "hunk",
        }
    }

    /// Said before the line to a screen reader (colour and sign are not
    /// read out).
    pub fn words(self) -> &'static str {
        match self {
            Mark::Same => "",
            Mark::Removed => "removed: ",
            Mark::Added => "added: ",
            Mark::Hunk => "",
        }
    }

    /// The sign shown in the margin.
    pub fn sign(self) -> &'static str {
        match self {
            Mark::Same | Mark::Hunk => " ",
            Mark::Removed => "\u{2212}",
            Mark::Added => "+",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    pub mark: Mark,
    pub text: String,
    /// Its number in the old file, where known.
    pub old: Option<usize>,
    /// Its number in the new file, where known.
    pub new: Option<usize>,
}

impl DiffLine {
    fn new(mark: Mark, text: &str) -> DiffLine {
        DiffLine { mark, text: text.to_owned(), old: None, new: None }
    }

    /// The number shown beside it: the new file's, else the old one's.
    pub fn number(&self) -> Option<usize> {
        match self.mark {
            Mark::Removed => self.old,
            _ => self.new.or(self.old),
        }
    }
}

/// One file's change, as a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeView {
    pub path: String,
    /// The path as shown: relative to the project when under it.
    pub shown_path: String,
    pub move_to: Option<String>,
    pub deleted: bool,
    /// The whole file is written (its old content, if any, is not known).
    pub whole_file: bool,
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
}

impl ChangeView {
    pub fn of(change: &FileChange) -> ChangeView {
        let lines = match (&change.diff, &change.old, &change.new) {
            (Some(diff), _, _) => parse_hunks(diff),
            (None, Some(old), Some(new)) => diff_texts(old, new),
            (None, Some(old), None) => lines(old).iter().map(|l| DiffLine::new(Mark::Removed, l)).collect(),
            (None, None, Some(new)) => numbered_new(new),
            (None, None, None) => Vec::new(),
        };
        let count = |m: Mark| lines.iter().filter(|l| l.mark == m).count();
        ChangeView {
            path: change.path.clone(),
            shown_path: change.path.clone(),
            move_to: change.move_to.clone(),
            deleted: change.deleted,
            whole_file: change.diff.is_none() && change.old.is_none() && change.new.is_some(),
            added: count(Mark::Added),
            removed: count(Mark::Removed),
            lines,
        }
    }

    /// `+3 −1`: its size at a glance.
    pub fn size_words(&self) -> String {
        format!("+{} \u{2212}{}", self.added, self.removed)
    }

    /// What happens to the file, in words, when the diff alone does not say.
    pub fn action_words(&self) -> Option<String> {
        if self.deleted {
            return Some("Deletes the file".to_owned());
        }
        if let Some(to) = &self.move_to {
            return Some(format!("Moves it to {to}"));
        }
        self.whole_file.then(|| "Writes the whole file".to_owned())
    }
}

/// A new file's content: every line added, numbered from 1.
fn numbered_new(text: &str) -> Vec<DiffLine> {
    lines(text)
        .iter()
        .enumerate()
        .map(|(i, l)| DiffLine { new: Some(i + 1), ..DiffLine::new(Mark::Added, l) })
        .collect()
}

/// Patch hunks: `@@ -a,b +c,d @@` headers number the lines after them;
/// a header without numbers (Codex's `@@ fn main`) leaves them unknown.
pub fn parse_hunks(diff: &str) -> Vec<DiffLine> {
    let (mut old, mut new) = (None::<usize>, None::<usize>);
    let mut out = Vec::new();
    for line in diff.lines() {
        if let Some(header) = line.strip_prefix("@@") {
            (old, new) = hunk_start(header);
            out.push(DiffLine::new(Mark::Hunk, line));
            continue;
        }
        let (mark, text) = match line.chars().next() {
            Some('-') => (Mark::Removed, &line[1..]),
            Some('+') => (Mark::Added, &line[1..]),
            Some(' ') => (Mark::Same, &line[1..]),
            _ => (Mark::Same, line),
        };
        let mut l = DiffLine::new(mark, text);
        if mark != Mark::Added {
            l.old = old;
            old = old.map(|n| n + 1);
        }
        if mark != Mark::Removed {
            l.new = new;
            new = new.map(|n| n + 1);
        }
        out.push(l);
    }
    out
}

/// `-12,5 +12,6 @@ …` → `(Some(12), Some(12))`.
fn hunk_start(header: &str) -> (Option<usize>, Option<usize>) {
    let mut words = header.split_whitespace();
    let mut number = |sign: char| words.next()?.strip_prefix(sign)?.split(',').next()?.parse::<usize>().ok();
    let old = number('-');
    let new = old.and_then(|_| number('+'));
    match (old, new) {
        (Some(o), Some(n)) => (Some(o), Some(n)),
        _ => (None, None),
    }
}

/// The lines of `old` replaced by `new`, unchanged lines kept as context:
/// the longest run of common lines (prefix and suffix first, then the
/// rest searched when it is small enough).
pub fn diff_texts(old: &str, new: &str) -> Vec<DiffLine> {
    let (a, b) = (lines(old), lines(new));
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut out: Vec<DiffLine> = a[..prefix].iter().map(|l| DiffLine::new(Mark::Same, l)).collect();
    out.extend(middle(mid_a, mid_b));
    out.extend(a[a.len() - suffix..].iter().map(|l| DiffLine::new(Mark::Same, l)));
    out
}

/// The changed middle: common lines found by a longest common
/// subsequence when small enough, else all removed then all added.
fn middle(a: &[String], b: &[String]) -> Vec<DiffLine> {
    let removed = |l: &String| DiffLine::new(Mark::Removed, l);
    let added = |l: &String| DiffLine::new(Mark::Added, l);
    if a.is_empty() || b.is_empty() || (a.len() + 1) * (b.len() + 1) > DIFF_CELLS {
        return a.iter().map(removed).chain(b.iter().map(added)).collect();
    }
    // lcs[i][j]: the longest common run of a[i..] and b[j..].
    let w = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * w + j] =
                if a[i] == b[j] { lcs[(i + 1) * w + j + 1] + 1 } else { lcs[(i + 1) * w + j].max(lcs[i * w + j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(DiffLine::new(Mark::Same, &a[i]));
            (i, j) = (i + 1, j + 1);
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            out.push(removed(&a[i]));
            i += 1;
        } else {
            out.push(added(&b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(removed));
    out.extend(b[j..].iter().map(added));
    out
}

/// `Show all 12 lines`: the fold's button, naming what it brings in.
pub fn show_all_words(total: usize, what: &str) -> String {
    format!("Show all {total} {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(lines: &[DiffLine]) -> Vec<(Mark, &str)> {
        lines.iter().map(|l| (l.mark, l.text.as_str())).collect()
    }

    #[test]
    fn lines_are_counted_as_written_and_a_final_break_adds_none() {
        assert_eq!(lines("a\nb\r\nc\n").len(), 3);
        assert_eq!(lines("one").len(), 1);
        let twelve = (1..=12).map(|i| format!("step {i}")).collect::<Vec<_>>().join("\n");
        assert_eq!(lines(&twelve).len(), 12);
    }

    #[test]
    fn a_long_command_folds_to_its_first_lines_and_a_short_one_does_not() {
        assert_eq!(COMMAND_FOLD.shown(8), None);
        assert_eq!(COMMAND_FOLD.shown(12), Some(6));
        assert_eq!(DIFF_FOLD.shown(30), None);
        assert_eq!(DIFF_FOLD.shown(240), Some(20));
        assert_eq!(show_all_words(12, "lines"), "Show all 12 lines");
    }

    #[test]
    fn a_line_splits_into_tokens_and_the_spaces_between_them() {
        assert_eq!(
            pieces("  git reset --hard"),
            [
                Piece::Space("  "),
                Piece::Token("git"),
                Piece::Space(" "),
                Piece::Token("reset"),
                Piece::Space(" "),
                Piece::Token("--hard")
            ]
        );
        assert_eq!(pieces(""), []);
        assert_eq!(
            pieces("rm -rf ~/.cargo/registry "),
            [
                Piece::Token("rm"),
                Piece::Space(" "),
                Piece::Token("-rf"),
                Piece::Space(" "),
                Piece::Token("~/.cargo/registry"),
                Piece::Space(" ")
            ]
        );
    }

    #[test]
    fn an_edit_is_diffed_line_by_line_keeping_unchanged_lines() {
        let old = "fn retry() {\n    let tries = 3;\n    sleep(100);\n}\n";
        let new = "fn retry() {\n    let tries = 5;\n    sleep(100);\n    log();\n}\n";
        let d = diff_texts(old, new);
        assert_eq!(
            marks(&d),
            [
                (Mark::Same, "fn retry() {"),
                (Mark::Removed, "    let tries = 3;"),
                (Mark::Added, "    let tries = 5;"),
                (Mark::Same, "    sleep(100);"),
                (Mark::Added, "    log();"),
                (Mark::Same, "}"),
            ]
        );
        let v = ChangeView::of(&FileChange {
            path: "r.rs".into(),
            old: Some(old.into()),
            new: Some(new.into()),
            ..Default::default()
        });
        assert_eq!((v.added, v.removed, v.size_words().as_str()), (2, 1, "+2 \u{2212}1"));
        assert_eq!(v.action_words(), None);
    }

    #[test]
    fn a_diff_too_large_to_search_is_shown_removed_then_added() {
        let old = (0..600).map(|i| format!("a{i}")).collect::<Vec<_>>().join("\n");
        let new = (0..600).map(|i| format!("b{i}")).collect::<Vec<_>>().join("\n");
        let d = diff_texts(&old, &new);
        assert_eq!(d.len(), 1200);
        assert!(d[..600].iter().all(|l| l.mark == Mark::Removed) && d[600..].iter().all(|l| l.mark == Mark::Added));
    }

    #[test]
    fn hunks_number_their_lines_when_the_header_does() {
        let d = parse_hunks("@@ -10,3 +10,3 @@ fn a\n keep\n-old\n+new\n tail");
        let numbered: Vec<_> = d.iter().map(|l| (l.mark, l.old, l.new)).collect();
        assert_eq!(
            numbered,
            [
                (Mark::Hunk, None, None),
                (Mark::Same, Some(10), Some(10)),
                (Mark::Removed, Some(11), None),
                (Mark::Added, None, Some(11)),
                (Mark::Same, Some(12), Some(12)),
            ]
        );
        assert_eq!(d[2].number(), Some(11));
        let codex = parse_hunks("@@ fn main\n-    a();\n+    b();");
        assert!(codex.iter().all(|l| l.number().is_none()), "Codex's hunks give no numbers");
        assert_eq!(marks(&codex)[1..], [(Mark::Removed, "    a();"), (Mark::Added, "    b();")]);
    }

    #[test]
    fn a_whole_file_is_numbered_from_one_and_a_deletion_says_so() {
        let w = ChangeView::of(&FileChange { path: "n.md".into(), new: Some("# A\nb\n".into()), ..Default::default() });
        assert_eq!(w.lines.iter().map(|l| l.new).collect::<Vec<_>>(), [Some(1), Some(2)]);
        assert_eq!(w.action_words().as_deref(), Some("Writes the whole file"));
        let gone = ChangeView::of(&FileChange { path: "t.txt".into(), deleted: true, ..Default::default() });
        assert_eq!((gone.lines.len(), gone.action_words().as_deref()), (0, Some("Deletes the file")));
    }

    #[test]
    fn a_path_under_the_project_is_shown_relative_to_it() {
        let cwd = Some("/home/dev/src/shop/");
        assert_eq!(in_project("/home/dev/src/shop/src/retry.rs", cwd), "src/retry.rs");
        assert_eq!(in_project("/home/dev/src/shopping/x.rs", cwd), "/home/dev/src/shopping/x.rs");
        assert_eq!(in_project("/etc/hosts", cwd), "/etc/hosts");
        assert_eq!(in_project("src/a.rs", None), "src/a.rs");
        let file = FileChange { path: "/home/dev/src/shop/a.rs".into(), new: Some("x".into()), ..Default::default() };
        let d = Detail::of(&RequestContext { changes: vec![file], ..Default::default() }, cwd);
        assert_eq!((d.changes[0].shown_path.as_str(), d.changes[0].path.as_str()), ("a.rs", "/home/dev/src/shop/a.rs"));
    }

    #[test]
    fn a_context_without_content_shows_nothing_and_blank_text_is_dropped() {
        assert!(Detail::of(&RequestContext::default(), None).is_empty());
        let blank = RequestContext { description: Some("  ".into()), command: Some("".into()), ..Default::default() };
        assert!(Detail::of(&blank, None).is_empty());
        let d = Detail::of(&RequestContext { command: Some("a\nb".into()), ..Default::default() }, None);
        assert_eq!(d.command.as_deref(), Some(&["a".to_owned(), "b".to_owned()][..]));
    }
}
