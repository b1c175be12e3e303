//! Column alignment as Go's `text/tabwriter` does it with `NewWriter(out, 0, 0, padding, ' ', 0)`, which
//! kcp's `tree --wide` prints through: tab-terminated cells of consecutive lines form a column as wide as
//! its widest cell plus the padding; the text after a line's last tab is not aligned.

/// Aligns `text` (lines of tab-separated cells).
pub fn align(text: &str, padding: usize) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut out = String::new();
    format(&lines, &mut Vec::new(), 0, lines.len(), padding, &mut out);
    // `split` saw one line more than there are newlines.
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Go's recursive `format`: finds the blocks of lines having a cell in column `widths.len()`, sizes the
/// column per block and recurses for the next column.
fn format(
    lines: &[Vec<&str>],
    widths: &mut Vec<usize>,
    mut start: usize,
    end: usize,
    padding: usize,
    out: &mut String,
) {
    let column = widths.len();
    let has_cell = |line: &Vec<&str>| column + 1 < line.len();
    let mut this = start;
    while this < end {
        if !has_cell(&lines[this]) {
            this += 1;
            continue;
        }
        write_lines(lines, widths, start, this, out);
        start = this;
        let mut width = 0;
        while this < end && has_cell(&lines[this]) {
            width = width.max(lines[this][column].chars().count() + padding);
            this += 1;
        }
        widths.push(width);
        format(lines, widths, start, this, padding, out);
        widths.pop();
        start = this;
    }
    write_lines(lines, widths, start, end, out);
}

fn write_lines(lines: &[Vec<&str>], widths: &[usize], start: usize, end: usize, out: &mut String) {
    for line in &lines[start..end] {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if j < widths.len() && j + 1 < line.len() {
                let pad = widths[j].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_blocks_by_runes() {
        let text = ".\n└── root\tws=-\tlc=Ready\n    ├── a\tws=Ready\tlc=Ready\n    └── bb-long\tws=Initializing\tlc=Unknown\n";
        assert_eq!(
            align(text, 2),
            ".\n└── root         ws=-             lc=Ready\n    ├── a        ws=Ready         lc=Ready\n    └── bb-long  ws=Initializing  lc=Unknown\n"
        );
    }

    #[test]
    fn a_line_without_cells_splits_blocks() {
        assert_eq!(align("a\tb\nc\nlong\td\n", 1), "a b\nc\nlong d\n");
    }
}
