//! Plain-text output: aligned tables with a header row, key/value blocks, and the few
//! formats (sizes, durations, times) the tables share. No colours and no box drawing, so the
//! output pastes cleanly into tickets and greps well.

use std::fmt::Write as _;

/// A table: a header and rows of cells, columns padded to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row, ending in a newline.
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                if i + 1 == columns {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `key  value` lines with the keys padded to the widest.
pub fn pairs(items: &[(&str, String)]) -> String {
    let width = items.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in items {
        let _ = writeln!(out, "{key:<width$}  {value}");
    }
    out
}

/// `1.5 MiB`, `900 B`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `35 us`, `1.234 ms`, `2.500 s`.
pub fn micros(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} us"),
        1_000..1_000_000 => format!("{:.3} ms", us as f64 / 1e3),
        _ => format!("{:.3} s", us as f64 / 1e6),
    }
}

/// Unix milliseconds as `2026-11-29T17:04:21Z` (UTC).
pub fn unix_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `orders[0,1,2] payments[4]` from a `{"orders": [0, 1, 2], ...}` JSON object.
pub fn assignment(value: &serde_json::Value) -> String {
    let Some(map) = value.as_object() else {
        return "-".into();
    };
    let parts: Vec<String> = map
        .iter()
        .filter_map(|(topic, partitions)| {
            let list: Vec<String> = partitions
                .as_array()?
                .iter()
                .map(|p| p.to_string())
                .collect();
            (!list.is_empty()).then(|| format!("{topic}[{}]", list.join(",")))
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_lines_have_no_trailing_spaces() {
        let mut table = Table::new(&["NAME", "ACTIVE", "NOTE"]);
        table.row(vec!["range".into(), "0".into(), "".into()]);
        table.row(vec!["my-strategy".into(), "12".into(), "new".into()]);
        assert_eq!(
            table.render(),
            "NAME         ACTIVE  NOTE\nrange        0\nmy-strategy  12      new\n"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(bytes(900), "900 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(micros(35), "35 us");
        assert_eq!(micros(1_234), "1.234 ms");
        assert_eq!(micros(2_500_000), "2.500 s");
        assert_eq!(unix_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(unix_ms(1_795_971_861_000), "2026-11-29T17:04:21Z");
        assert_eq!(unix_ms(951_782_400_000), "2000-02-29T00:00:00Z");
        let a = serde_json::json!({"orders": [0, 1], "audit": [], "pay": [3]});
        assert_eq!(assignment(&a), "orders[0,1] pay[3]");
        assert_eq!(assignment(&serde_json::json!({})), "-");
    }
}
